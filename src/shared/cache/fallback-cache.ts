import { Logger } from '@nestjs/common';
import { Cache } from './cache';
import { MemoryCache } from './memory-cache';

/**
 * The shared cache, or this process's memory while the shared one cannot be reached: for
 * counters that must keep counting through an outage (the authentication throttles),
 * where a count per process is better than none and than refusing every request. It says
 * so in the log once when it falls back and once when the shared cache answers again.
 */
export class FallbackCache implements Cache {
  private readonly logger = new Logger('Cache');
  private readonly local = new MemoryCache();
  private degraded = false;

  constructor(private readonly shared: Cache, private readonly purpose: string) {}

  get(key: string) {
    return this.either((cache) => cache.get(key));
  }
  set(key: string, value: string, ttlSeconds?: number) {
    return this.either((cache) => cache.set(key, value, ttlSeconds));
  }
  setIfAbsent(key: string, value: string, ttlSeconds?: number) {
    return this.either((cache) => cache.setIfAbsent(key, value, ttlSeconds));
  }
  delete(key: string) {
    return this.either((cache) => cache.delete(key));
  }
  incr(key: string, ttlSeconds?: number) {
    return this.either((cache) => cache.incr(key, ttlSeconds));
  }
  ttl(key: string) {
    return this.either((cache) => cache.ttl(key));
  }
  ping() {
    return this.shared.ping();
  }
  async close() {
    await this.local.close();
  }

  private async either<T>(use: (cache: Cache) => Promise<T>): Promise<T> {
    try {
      const answer = await use(this.shared);
      if (this.degraded) {
        this.degraded = false;
        this.logger.log(`The shared cache answers again; ${this.purpose} are shared by every replica again`);
      }
      return answer;
    } catch (error) {
      if (!this.degraded) {
        this.degraded = true;
        this.logger.warn({ err: error }, `The shared cache cannot be reached; ${this.purpose} are counted in this process until it is back`);
      }
      return use(this.local);
    }
  }
}
