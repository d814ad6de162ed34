import { Cache } from '../../shared/cache/cache';
import { DomainError } from '../../shared/errors/domain-error';

/**
 * A fixed-window counter in the shared cache, so every replica sees the same counts.
 * A key is blocked once its count reaches the limit, until the window's key expires.
 * AuthThrottles gives it a FallbackCache, so it counts in process memory while the shared
 * cache is down rather than refusing every caller.
 */
export class Throttle {
  constructor(
    private readonly cache: Cache,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly windowSeconds: number,
  ) {}

  /** Seconds to wait when the key is blocked, else null. */
  async retryAfter(key: string): Promise<number | null> {
    const count = Number((await this.cache.get(this.prefix + key)) ?? 0);
    if (count < this.limit) return null;
    const ttl = await this.cache.ttl(this.prefix + key);
    return Math.max(1, ttl ?? this.windowSeconds);
  }

  /** Counts one event; returns the count within the current window. */
  async count(key: string): Promise<number> {
    return this.cache.incr(this.prefix + key, this.windowSeconds);
  }

  /** Counts one event; the seconds to wait when that event went past the limit, else null. */
  async hit(key: string): Promise<number | null> {
    const count = await this.count(key);
    if (count <= this.limit) return null;
    return Math.max(1, (await this.cache.ttl(this.prefix + key)) ?? this.windowSeconds);
  }

  /** Throws 429 `throttled` with `Retry-After` when any of the keys is blocked. */
  async assertOpen(keys: string[], message: string): Promise<void> {
    for (const key of keys) {
      const wait = await this.retryAfter(key);
      if (wait !== null) throw throttled(wait, message);
    }
  }
}

export function throttled(retryAfterSeconds: number, message: string): DomainError {
  return new DomainError('throttled', message, {
    headers: { 'Retry-After': String(retryAfterSeconds) },
    details: { retry_after: retryAfterSeconds },
  });
}
