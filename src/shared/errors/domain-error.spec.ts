import { DomainError } from './domain-error';

describe('DomainError.invalid', () => {
  it('says the first problem once, under the field\'s full path', () => {
    expect(DomainError.invalid({ name: ['name must be a string'] }).message).toBe('name must be a string.');
    expect(DomainError.invalid({ 'runtime_target.type': ['type must be one of local'] }).message).toBe('runtime_target.type must be one of local.');
    expect(DomainError.invalid({ env: ['must be an object of string values'] }).message).toBe('env: must be an object of string values.');
    expect(DomainError.invalid({}).message).toBe('Invalid request.');
  });

  it('keeps every message by field for the errors member', () => {
    const error = DomainError.invalid({ a: ['a is wrong', 'a is short'], b: ['b is missing'] });
    expect(error.options.fields).toEqual({ a: ['a is wrong', 'a is short'], b: ['b is missing'] });
    expect(error.status).toBe(400);
  });
});
