import { Cache } from './cache';

interface Entry {
  value: string;
  expiresAt: number | null;
}

/** One process's cache; used when no REDIS_URL is set. */
export class MemoryCache implements Cache {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly prefix = '') {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    this.entries.set(this.prefix + key, { value, expiresAt: expiry(ttlSeconds) });
  }

  async setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean> {
    if (this.live(key)) return false;
    await this.set(key, value, ttlSeconds);
    return true;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(this.prefix + key);
  }

  async incr(key: string, ttlSeconds?: number): Promise<number> {
    const entry = this.live(key);
    const count = (entry ? Number(entry.value) || 0 : 0) + 1;
    this.entries.set(this.prefix + key, {
      value: String(count),
      expiresAt: entry ? entry.expiresAt : expiry(ttlSeconds),
    });
    return count;
  }

  async ttl(key: string): Promise<number | null> {
    const entry = this.live(key);
    if (!entry || entry.expiresAt === null) return null;
    return Math.max(0, Math.ceil((entry.expiresAt - Date.now()) / 1000));
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(this.prefix + key);
    if (entry && entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
      this.entries.delete(this.prefix + key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== null && entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}

function expiry(ttlSeconds?: number): number | null {
  return ttlSeconds && ttlSeconds > 0 ? Date.now() + ttlSeconds * 1000 : null;
}
