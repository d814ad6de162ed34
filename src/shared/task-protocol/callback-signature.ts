import { createHmac, timingSafeEqual } from 'node:crypto';

const SIGNATURE = /^sha256=([0-9a-f]{64})$/;

/**
 * `X-Service-Signature` of a task callback (CONTRACT "Task callback"): `sha256=` + lower-case
 * hex HMAC-SHA256(CALLBACK_SIGNING_KEY, raw body bytes). The dispatcher signs, the controller verifies.
 */
export function signCallbackBody(key: string, rawBody: Buffer | string): string {
  return `sha256=${createHmac('sha256', key).update(rawBody).digest('hex')}`;
}

/** True when `header` is the signature of `rawBody` under `key`, compared in constant time. */
export function verifyCallbackSignature(key: string, rawBody: Buffer, header: string | undefined): boolean {
  const match = header ? SIGNATURE.exec(header) : null;
  if (!match) return false;
  const expected = createHmac('sha256', key).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(match[1], 'hex'));
}
