import { randomBytes } from 'node:crypto';
import { Cache } from '../../src/shared/cache/cache';
import { MemoryCache } from '../../src/shared/cache/memory-cache';
import { RedisCache } from '../../src/shared/cache/redis-cache';
import { testServices } from '../harness/services';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function redisCache(): Promise<Cache> {
  const url = testServices().redisUrl;
  if (!url) throw new Error('Redis is not reachable: the Redis cache spec needs TEST_REDIS_URL or 127.0.0.1:6379');
  const cache = new RedisCache(url, `atc-cache-spec:${randomBytes(4).toString('hex')}:`);
  await cache.connect();
  return cache;
}

const implementations: [string, () => Promise<Cache>][] = [
  ['memory', async () => new MemoryCache(`spec:${randomBytes(4).toString('hex')}:`)],
  ...(testServices().redisUrl ? [['redis', redisCache] as [string, () => Promise<Cache>]] : []),
];

describe.each(implementations)('%s cache', (_name, create) => {
  let cache: Cache;
  beforeEach(async () => {
    cache = await create();
  });
  afterEach(() => cache.close());

  it('gets what was set and nothing for unknown keys', async () => {
    await cache.set('a', 'one');
    expect(await cache.get('a')).toBe('one');
    expect(await cache.get('missing')).toBeNull();
  });

  it('forgets a key after its TTL', async () => {
    await cache.set('short', 'x', 1);
    expect(await cache.ttl('short')).toBeGreaterThanOrEqual(0);
    await sleep(1100);
    expect(await cache.get('short')).toBeNull();
  });

  it('stores with setIfAbsent only once, even when asked at the same time', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => cache.setIfAbsent('once', String(i), 60)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await cache.get('once')).toBe(String(results.indexOf(true)));
  });

  it('counts with incr and keeps the first TTL', async () => {
    expect(await cache.incr('count', 60)).toBe(1);
    expect(await cache.incr('count', 60)).toBe(2);
    expect(await Promise.all([cache.incr('count'), cache.incr('count')])).toEqual(expect.arrayContaining([3, 4]));
    const ttl = await cache.ttl('count');
    expect(ttl).toBeGreaterThan(50);
    expect(ttl).toBeLessThanOrEqual(60);
  });

  it('deletes keys and answers ping', async () => {
    await cache.set('gone', 'x');
    await cache.delete('gone');
    expect(await cache.get('gone')).toBeNull();
    expect(await cache.ttl('gone')).toBeNull();
    await expect(cache.ping()).resolves.toBeUndefined();
  });
});

it('the Redis cache is exercised when Redis runs here', () => {
  // CI starts Redis; a run without it says so in the global setup's output.
  if (process.env.CI) expect(testServices().redisUrl).toBeTruthy();
});
