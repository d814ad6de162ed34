import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** SHA-256 hex of a high-entropy token: what is stored and looked up, never the token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new opaque token: 32 random bytes, base64url, with a readable prefix. */
export function newToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Constant-time equality of two strings of any length (compares their digests). */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/** True once `expiresAt` is reached: a token is refused from its expiry instant on. */
export function isExpired(expiresAt: Date, now: Date = new Date()): boolean {
  return expiresAt.getTime() <= now.getTime();
}
