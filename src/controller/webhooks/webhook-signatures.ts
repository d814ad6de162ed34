import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../shared/errors/domain-error';

export type WebhookSource = 'forge' | 'chat' | 'custom';
export const WEBHOOK_SOURCES: readonly WebhookSource[] = ['forge', 'chat', 'custom'];

/** Request headers as Node gives them: lower-case names, a value or a list. */
export type HeaderBag = Record<string, string | string[] | undefined>;

export interface WebhookSecrets {
  forge: string | null;
  chat: string | null;
  custom: string | null;
}

/** How long a chat or Standard Webhooks timestamp stays acceptable, in seconds. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

const SECRET_SETTINGS: Record<WebhookSource, string> = {
  forge: 'FORGE_WEBHOOK_SECRET',
  chat: 'CHAT_SIGNING_SECRET',
  custom: 'CUSTOM_WEBHOOK_SECRET',
};

export function header(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** CONTRACT "Webhooks": the explicit header, then the forge headers, then the chat ones. */
export function detectSource(headers: HeaderBag): WebhookSource {
  const explicit = header(headers, 'x-webhook-source')?.trim().toLowerCase();
  if (explicit !== undefined) {
    if ((WEBHOOK_SOURCES as readonly string[]).includes(explicit)) return explicit as WebhookSource;
    throw DomainError.invalid({ 'X-Webhook-Source': [`must be one of ${WEBHOOK_SOURCES.join(', ')}`] });
  }
  if (header(headers, 'x-forge-event') || header(headers, 'x-github-event')) return 'forge';
  if (header(headers, 'x-chat-signature') || header(headers, 'x-slack-signature')) return 'chat';
  throw DomainError.invalid(
    { 'X-Webhook-Source': ['is required when no forge or chat header names the source'] },
    'Webhook source unknown: send X-Webhook-Source, or a forge or chat delivery with its own headers.',
  );
}

/** The event: `X-Webhook-Event`, else the forge event header, else the payload's `type`. */
export function detectEvent(source: WebhookSource, headers: HeaderBag, payload: unknown): string {
  const explicit = header(headers, 'x-webhook-event') ?? (source === 'forge'
    ? header(headers, 'x-forge-event') ?? header(headers, 'x-github-event')
    : undefined);
  const fromPayload = payload && typeof payload === 'object' ? (payload as Record<string, unknown>).type : undefined;
  const event = explicit ?? (typeof fromPayload === 'string' ? fromPayload : undefined);
  if (!event) {
    throw DomainError.invalid({ 'X-Webhook-Event': ['is required (or a payload "type")'] }, 'Webhook event unknown: send X-Webhook-Event.');
  }
  return event.trim();
}

/** The sender's delivery id, used to refuse a second run of the same delivery. */
export function detectDeliveryId(source: WebhookSource, headers: HeaderBag, payload: unknown): string | null {
  if (source === 'forge') return header(headers, 'x-forge-delivery') ?? header(headers, 'x-github-delivery') ?? null;
  if (source === 'chat') {
    const eventId = payload && typeof payload === 'object' ? (payload as Record<string, unknown>).event_id : undefined;
    return typeof eventId === 'string' && eventId !== '' ? eventId : null;
  }
  return header(headers, 'webhook-id') ?? header(headers, 'x-webhook-id') ?? null;
}

/** Equal strings in time that depends only on their lengths. */
export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function hmacHex(key: string | Buffer, ...parts: (string | Buffer)[]): string {
  const hmac = createHmac('sha256', key);
  for (const part of parts) hmac.update(part);
  return hmac.digest('hex');
}

function unauthorized(missing: boolean, message: string): DomainError {
  return new DomainError(missing ? 'not_authenticated' : 'authentication_failed', message, {
    headers: { 'WWW-Authenticate': 'Signature realm="webhooks"' },
  });
}

export interface VerifyInput {
  source: WebhookSource;
  headers: HeaderBag;
  rawBody: Buffer;
  secrets: WebhookSecrets;
  production: boolean;
  nowMs?: number;
}

/**
 * Checks a delivery's signature on its exact bytes. Returns true when a signature was
 * verified, false when the source has no secret and unsigned deliveries are allowed;
 * throws 401 for a missing or bad signature and 403 in production without a secret.
 */
export function verifyWebhookSignature(input: VerifyInput): boolean {
  const secret = input.secrets[input.source];
  if (!secret) {
    if (input.production) {
      throw new DomainError(
        'permission_denied',
        `${SECRET_SETTINGS[input.source]} is not set; unsigned ${input.source} deliveries are refused when NODE_ENV=production.`,
      );
    }
    return false;
  }
  const nowMs = input.nowMs ?? Date.now();
  if (input.source === 'forge') verifyForge(input.headers, input.rawBody, secret);
  else if (input.source === 'chat') verifyChat(input.headers, input.rawBody, secret, nowMs);
  else verifyCustom(input.headers, input.rawBody, secret, nowMs);
  return true;
}

function verifyForge(headers: HeaderBag, body: Buffer, secret: string): void {
  const given = header(headers, 'x-forge-signature-256') ?? header(headers, 'x-hub-signature-256');
  if (!given) throw unauthorized(true, 'Forge signature missing: X-Forge-Signature-256 or X-Hub-Signature-256 is required.');
  if (!safeEqual(given, `sha256=${hmacHex(secret, body)}`)) throw unauthorized(false, 'Forge signature does not match the body.');
}

function verifyChat(headers: HeaderBag, body: Buffer, secret: string, nowMs: number): void {
  const given = header(headers, 'x-chat-signature') ?? header(headers, 'x-slack-signature');
  const timestamp = header(headers, 'x-chat-request-timestamp') ?? header(headers, 'x-slack-request-timestamp');
  if (!given || !timestamp) {
    throw unauthorized(true, 'Chat signature missing: X-Chat-Signature and X-Chat-Request-Timestamp are required.');
  }
  assertFresh(timestamp, nowMs, 'Chat request timestamp');
  const expected = `v0=${hmacHex(secret, `v0:${timestamp}:`, body)}`;
  if (!safeEqual(given, expected)) throw unauthorized(false, 'Chat signature does not match the body.');
}

function verifyCustom(headers: HeaderBag, body: Buffer, secret: string, nowMs: number): void {
  const simple = header(headers, 'x-webhook-signature');
  if (simple) {
    if (!safeEqual(simple, `sha256=${hmacHex(secret, body)}`)) throw unauthorized(false, 'Webhook signature does not match the body.');
    return;
  }
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw unauthorized(true, 'Webhook signature missing: send X-Webhook-Signature or the webhook-id, webhook-timestamp and webhook-signature headers.');
  }
  assertFresh(timestamp, nowMs, 'webhook-timestamp');
  const expected = createHmac('sha256', standardWebhooksKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest('base64');
  // Every candidate is compared, so the time taken does not tell which one was close.
  let matched = false;
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',', 2);
    if (version === 'v1' && signature !== undefined && safeEqual(signature, expected)) matched = true;
  }
  if (!matched) throw unauthorized(false, 'Webhook signature does not match the body.');
}

/** The Standard Webhooks key: the base64 after `whsec_` (or the whole secret without it). */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

function assertFresh(timestamp: string, nowMs: number, what: string): void {
  const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
  if (!Number.isFinite(seconds) || Math.abs(nowMs / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw unauthorized(false, `${what} is missing, malformed or more than ${TIMESTAMP_TOLERANCE_SECONDS} s from now.`);
  }
}
