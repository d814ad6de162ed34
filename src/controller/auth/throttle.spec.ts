import { MemoryCache } from '../../shared/cache/memory-cache';
import { DomainError } from '../../shared/errors/domain-error';
import { Throttle } from './throttle';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('throttle', () => {
  let cache: MemoryCache;
  beforeEach(() => {
    cache = new MemoryCache('test:');
  });
  afterEach(() => cache.close());

  it('stays open below the limit and blocks once the limit is reached', async () => {
    const throttle = new Throttle(cache, 'fail:', 3, 60);
    await throttle.count('10.0.0.1');
    await throttle.count('10.0.0.1');
    expect(await throttle.retryAfter('10.0.0.1')).toBeNull();
    await throttle.count('10.0.0.1');
    const wait = await throttle.retryAfter('10.0.0.1');
    expect(wait).toBeGreaterThanOrEqual(59);
    expect(wait).toBeLessThanOrEqual(60);
  });

  it('keeps keys apart', async () => {
    const throttle = new Throttle(cache, 'fail:', 1, 60);
    await throttle.count('a');
    expect(await throttle.retryAfter('a')).not.toBeNull();
    expect(await throttle.retryAfter('b')).toBeNull();
  });

  it('throws 429 throttled with Retry-After for a blocked key', async () => {
    const throttle = new Throttle(cache, 'fail:', 1, 30);
    await throttle.count('a');
    const error = await throttle.assertOpen(['b', 'a'], 'Slow down.').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).status).toBe(429);
    expect((error as DomainError).code).toBe('throttled');
    expect(Number((error as DomainError).options.headers?.['Retry-After'])).toBeGreaterThanOrEqual(29);
  });

  it('counts hits and answers a wait only past the limit', async () => {
    const throttle = new Throttle(cache, 'req:', 2, 60);
    expect(await throttle.hit('c')).toBeNull();
    expect(await throttle.hit('c')).toBeNull();
    expect(await throttle.hit('c')).toBeGreaterThan(0);
  });

  it('opens again when the window ends', async () => {
    const throttle = new Throttle(cache, 'fail:', 1, 1);
    await throttle.count('a');
    expect(await throttle.retryAfter('a')).toBe(1);
    await sleep(1100);
    expect(await throttle.retryAfter('a')).toBeNull();
  });
});
