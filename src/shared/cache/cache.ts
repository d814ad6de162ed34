/**
 * The shared cache: Redis in production, process memory in embedded mode. Values are
 * strings; TTLs are in seconds. Replicas share state only through a Redis cache.
 */
export interface Cache {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  /** Stores the value only when the key is absent; true when it was stored. */
  setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** Adds one and returns the new count; the TTL is set when the key is created. */
  incr(key: string, ttlSeconds?: number): Promise<number>;
  /** Seconds left before the key expires, or null when it is absent or has no expiry. */
  ttl(key: string): Promise<number | null>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const CACHE = Symbol('CACHE');
