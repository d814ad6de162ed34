import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The key an agent gets for its one task: hex HMAC-SHA256(AGENT_KEY, task id). */
export function perTaskAgentKey(agentKey: string, taskId: string): string {
  return createHmac('sha256', agentKey).update(taskId).digest('hex');
}

/** What every key derived from AGENT_KEY looks like (a task's, a pool's): a public format, so testing it leaks nothing. */
export const DERIVED_KEY = /^[0-9a-f]{64}$/;

/**
 * Whether `given` is the derived key `expected`: both of the same public length, so one
 * constant-time compare of their bytes, without hashing either (`secretsEqual` hashes both to
 * hide a secret's length: two HMACs on every agent request).
 */
export function derivedKeyMatches(given: string, expected: string): boolean {
  return DERIVED_KEY.test(given) && timingSafeEqual(Buffer.from(given, 'latin1'), Buffer.from(expected, 'latin1'));
}

/** Compares two secrets in constant time (unequal lengths are unequal, without a shortcut on content). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHmac('sha256', 'compare').update(given).digest();
  const b = createHmac('sha256', 'compare').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/** A key for one purpose, derived from a configured secret. */
export function deriveKey(secret: string, purpose: string): Buffer {
  return createHmac('sha256', secret).update(`agent-task-dispatcher:${purpose}`).digest();
}

/**
 * Seals a secret the dispatcher must present later (the callback token) with
 * AES-256-GCM, so the database never holds it in clear text.
 */
export function seal(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

export function unseal(key: Buffer, sealed: string): string {
  if (!sealed.startsWith('v1.')) throw new Error('unknown sealed format');
  const raw = Buffer.from(sealed.slice(3), 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
