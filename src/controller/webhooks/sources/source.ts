import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../../shared/errors/domain-error';

/** Request headers as Node gives them: lower-case names, a value or a list. */
export type HeaderBag = Record<string, string | string[] | undefined>;

/** How long a chat or Standard Webhooks timestamp stays acceptable, in seconds. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/**
 * One webhook sender's conventions: how its deliveries are recognised, signed, named
 * and identified. Ingest walks the registry in `index.ts`; a new sender is one file here.
 */
export interface WebhookSourceAdapter<Name extends string = string> {
  readonly name: Name;
  /** The setting that holds this source's secret, named in refusals. */
  readonly secretSetting: string;
  /** True when the headers say a delivery comes from this source (without X-Webhook-Source). */
  detect(headers: HeaderBag): boolean;
  /** Throws (or rejects with) 401 for a missing or wrong signature over the exact bytes. */
  verify(headers: HeaderBag, rawBody: Buffer, secret: string): void | Promise<void>;
  /** The event named by the source's own convention, before the payload's `type`. */
  event(headers: HeaderBag, payload: Record<string, unknown>): string | undefined;
  deliveryId(headers: HeaderBag, payload: Record<string, unknown>): string | null;
  /** An answer the sender expects instead of routing (a subscription handshake), or null. */
  handshake?(payload: Record<string, unknown>): Record<string, unknown> | null;
}

export function header(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** Equal strings in time that depends only on their lengths. */
export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function hmacHex(key: string | Buffer, ...parts: (string | Buffer)[]): string {
  const hmac = createHmac('sha256', key);
  for (const part of parts) hmac.update(part);
  return hmac.digest('hex');
}

export function unauthorized(missing: boolean, message: string): DomainError {
  return new DomainError(missing ? 'not_authenticated' : 'authentication_failed', message, {
    headers: { 'WWW-Authenticate': 'Signature realm="webhooks"' },
  });
}

export function assertFresh(timestamp: string, nowMs: number, what: string): void {
  const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
  if (!Number.isFinite(seconds) || Math.abs(nowMs / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw unauthorized(false, `${what} is missing, malformed or more than ${TIMESTAMP_TOLERANCE_SECONDS} s from now.`);
  }
}
