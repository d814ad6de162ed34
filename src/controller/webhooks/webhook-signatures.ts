import { DomainError } from '../../shared/errors/domain-error';
import { sourceAdapter, WEBHOOK_SOURCE_ADAPTERS, WEBHOOK_SOURCES, WebhookSource } from './sources';
import { header, HeaderBag } from './sources/source';

export { WEBHOOK_SOURCES } from './sources';
export type { WebhookSource } from './sources';
export { header, safeEqual, TIMESTAMP_TOLERANCE_SECONDS } from './sources/source';
export type { HeaderBag } from './sources/source';
export { standardWebhooksKey } from './sources/custom';

export type WebhookSecrets = Record<WebhookSource, string | null>;

/** CONTRACT "Webhooks": the explicit header, then each source's own headers in registry order. */
export function detectSource(headers: HeaderBag): WebhookSource {
  const explicit = header(headers, 'x-webhook-source')?.trim().toLowerCase();
  if (explicit !== undefined) {
    if ((WEBHOOK_SOURCES as readonly string[]).includes(explicit)) return explicit as WebhookSource;
    throw DomainError.invalid({ 'X-Webhook-Source': [`must be one of ${WEBHOOK_SOURCES.join(', ')}`] });
  }
  const detected = WEBHOOK_SOURCE_ADAPTERS.find((adapter) => adapter.detect(headers));
  if (detected) return detected.name;
  throw DomainError.invalid(
    { 'X-Webhook-Source': ['is required when no forge or chat header names the source'] },
    'Webhook source unknown: send X-Webhook-Source, or a forge or chat delivery with its own headers.',
  );
}

/** The event: `X-Webhook-Event`, else the source's own event header, else the payload's `type`. */
export function detectEvent(source: WebhookSource, headers: HeaderBag, payload: unknown): string {
  const fields = asObject(payload);
  const fromPayload = fields.type;
  const event = header(headers, 'x-webhook-event') ?? sourceAdapter(source).event(headers, fields) ??
    (typeof fromPayload === 'string' ? fromPayload : undefined);
  if (!event) {
    throw DomainError.invalid({ 'X-Webhook-Event': ['is required (or a payload "type")'] }, 'Webhook event unknown: send X-Webhook-Event.');
  }
  return event.trim();
}

/** The sender's delivery id, used to refuse a second run of the same delivery. */
export function detectDeliveryId(source: WebhookSource, headers: HeaderBag, payload: unknown): string | null {
  return sourceAdapter(source).deliveryId(headers, asObject(payload));
}

export interface VerifyInput {
  source: WebhookSource;
  headers: HeaderBag;
  rawBody: Buffer;
  secrets: WebhookSecrets;
  production: boolean;
}

/**
 * Checks a delivery's signature on its exact bytes. Returns true when a signature was
 * verified, false when the source has no secret and unsigned deliveries are allowed;
 * rejects with 401 for a missing or bad signature and 403 in production without a secret.
 */
export async function verifyWebhookSignature(input: VerifyInput): Promise<boolean> {
  const adapter = sourceAdapter(input.source);
  const secret = input.secrets[input.source];
  if (!secret) {
    if (input.production) {
      throw new DomainError(
        'permission_denied',
        `${adapter.secretSetting} is not set; unsigned ${input.source} deliveries are refused when NODE_ENV=production.`,
      );
    }
    return false;
  }
  await adapter.verify(input.headers, input.rawBody, secret);
  return true;
}

function asObject(payload: unknown): Record<string, unknown> {
  return payload && typeof payload === 'object' ? (payload as Record<string, unknown>) : {};
}
