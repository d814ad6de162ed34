/** Retry rules of the callback outbox (CONTRACT section 3). */
export const FIRST_DELAY_MS = 1000;
export const MAX_DELAY_MS = 5 * 60 * 1000;

/** Connection errors (no status), 408, 429 and 5xx are retried; any other answer is final. */
export function isRetryable(status: number | null): boolean {
  return status === null || status === 408 || status === 429 || status >= 500;
}

/**
 * The wait before attempt `attempts + 1`: 1 s doubling, capped at 5 min, with jitter
 * (a random point in the upper half), or what `Retry-After` asks when it asks for more.
 */
export function retryDelayMs(attempts: number, retryAfterMs: number | null, random = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.max(0, attempts - 1));
  const jittered = Math.round(base / 2 + (base / 2) * random());
  return retryAfterMs === null ? jittered : Math.min(MAX_DELAY_MS, Math.max(retryAfterMs, jittered));
}

/** `Retry-After` as seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
