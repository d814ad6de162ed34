import Redis from 'ioredis';
import { Cache } from './cache';

/** The cache shared by every replica, on Redis (`REDIS_URL`). */
export class RedisCache implements Cache {
  private readonly client: Redis;

  constructor(url: string, prefix = '') {
    this.client = new Redis(url, {
      keyPrefix: prefix,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    // Connection errors surface on each call (and in /ready/); without a listener
    // ioredis would also print every reconnect failure.
    this.client.on('error', () => undefined);
  }

  async connect(): Promise<void> {
    await this.client.connect();
  }

  async get(key: string): Promise<string | null> {
    return this.client.get(key);
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    if (ttlSeconds && ttlSeconds > 0) await this.client.set(key, value, 'EX', ttlSeconds);
    else await this.client.set(key, value);
  }

  async setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean> {
    const result = ttlSeconds && ttlSeconds > 0
      ? await this.client.set(key, value, 'EX', ttlSeconds, 'NX')
      : await this.client.set(key, value, 'NX');
    return result === 'OK';
  }

  async delete(key: string): Promise<void> {
    await this.client.del(key);
  }

  async incr(key: string, ttlSeconds?: number): Promise<number> {
    const [[, count]] = (await this.client
      .multi()
      .incr(key)
      .exec()) as [[Error | null, number]];
    if (count === 1 && ttlSeconds && ttlSeconds > 0) await this.client.expire(key, ttlSeconds);
    return count;
  }

  async ttl(key: string): Promise<number | null> {
    const seconds = await this.client.ttl(key);
    return seconds >= 0 ? seconds : null;
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
