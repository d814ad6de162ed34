import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The callback token for a task on one dispatcher: HMAC-SHA256 keyed with SECRET_KEY, so it
 * is unguessable without the key, new for each dispatcher a task goes to, and the same when
 * the controller sends the same task to the same dispatcher again (after a lost answer or a
 * restart), which keeps that request identical and the dispatcher's idempotency intact.
 * Only its hash is stored.
 */
export function deriveCallbackToken(secretKey: string, taskGuid: string, dispatcherGuid: string): string {
  return createHmac('sha256', secretKey).update(`callback-token\0${taskGuid}\0${dispatcherGuid}`).digest('base64url');
}

export function hashCallbackToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** True when `token` hashes to `storedHash`, compared in constant time. */
export function callbackTokenMatches(token: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const given = Buffer.from(hashCallbackToken(token), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}
