import { createHmac } from 'node:crypto';
import { assertFresh, header, HeaderBag, hmacHex, safeEqual, unauthorized, WebhookSourceAdapter } from './source';

/**
 * Any other sender: `X-Webhook-Signature: sha256=<hex HMAC(body)>`, or the Standard
 * Webhooks headers (`webhook-*`, or svix's `svix-*` spelling of the same scheme).
 */
export const customSource: WebhookSourceAdapter<'custom'> = {
  name: 'custom',
  secretSetting: 'CUSTOM_WEBHOOK_SECRET',
  detect: (headers) => Boolean(standardHeader(headers, 'id') || standardHeader(headers, 'signature')),
  verify(headers, rawBody, secret, nowMs) {
    const simple = header(headers, 'x-webhook-signature');
    if (simple) {
      if (!safeEqual(simple, `sha256=${hmacHex(secret, rawBody)}`)) throw unauthorized(false, 'Webhook signature does not match the body.');
      return;
    }
    verifyStandardWebhooks(headers, rawBody, secret, nowMs);
  },
  event: () => undefined,
  deliveryId: (headers) => standardHeader(headers, 'id') ?? header(headers, 'x-webhook-id') ?? null,
};

/** A Standard Webhooks header, under its own name or svix's. */
function standardHeader(headers: HeaderBag, part: 'id' | 'timestamp' | 'signature'): string | undefined {
  return header(headers, `webhook-${part}`) ?? header(headers, `svix-${part}`);
}

function verifyStandardWebhooks(headers: HeaderBag, rawBody: Buffer, secret: string, nowMs: number): void {
  const id = standardHeader(headers, 'id');
  const timestamp = standardHeader(headers, 'timestamp');
  const signatures = standardHeader(headers, 'signature');
  if (!id || !timestamp || !signatures) {
    throw unauthorized(true, 'Webhook signature missing: send X-Webhook-Signature or the webhook-id, webhook-timestamp and webhook-signature headers.');
  }
  assertFresh(timestamp, nowMs, 'webhook-timestamp');
  const expected = createHmac('sha256', standardWebhooksKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64');
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
