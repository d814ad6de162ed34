import { isDependencyDown } from './dependency-down';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDependencyDown', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED')],
    ['a reset wrapped as a cause', new Error('fetch failed', { cause: withCode('ECONNRESET') })],
    ['one of an AggregateError', new AggregateError([new Error('a'), withCode('ETIMEDOUT')])],
    ['a TypeORM driver error', Object.assign(new Error('query failed'), { driverError: new Error('Connection terminated unexpectedly') })],
    ['PostgreSQL shutting down', withCode('57P01', 'terminating connection due to administrator command')],
    ['PostgreSQL out of connections', withCode('53300', 'sorry, too many clients already')],
    ['ioredis without a connection', new Error("Stream isn't writeable and enableOfflineQueue options is false")],
  ])('is true for %s', (_name, error) => {
    expect(isDependencyDown(error)).toBe(true);
  });

  it.each([
    ['a programming error', new TypeError('x is not a function')],
    ['a unique violation', withCode('23505', 'duplicate key')],
    ['a missing file', withCode('ENOENT')],
    ['not an error', 'ECONNREFUSED'],
  ])('is false for %s', (_name, error) => {
    expect(isDependencyDown(error)).toBe(false);
  });
});
