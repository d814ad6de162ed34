import { Webhook } from 'standardwebhooks';
import { assertFresh, header, HeaderBag, hmacHex, safeEqual, unauthorized, WebhookSourceAdapter } from './source';

/**
 * Any other sender: `X-Webhook-Signature: sha256=<hex HMAC(body)>`, or the Standard
 * Webhooks headers (`webhook-*`, or svix's `svix-*` spelling of the same scheme), checked
 * by the Standard Webhooks reference library.
 */
export const customSource: WebhookSourceAdapter<'custom'> = {
  name: 'custom',
  secretSetting: 'CUSTOM_WEBHOOK_SECRET',
  detect: (headers) => Boolean(standardHeader(headers, 'id') || standardHeader(headers, 'signature')),
  verify(headers, rawBody, secret) {
    const simple = header(headers, 'x-webhook-signature');
    if (simple) {
      if (!safeEqual(simple, `sha256=${hmacHex(secret, rawBody)}`)) throw unauthorized(false, 'Webhook signature does not match the body.');
      return;
    }
    verifyStandardWebhooks(headers, rawBody, secret);
  },
  event: () => undefined,
  deliveryId: (headers) => standardHeader(headers, 'id') ?? header(headers, 'x-webhook-id') ?? null,
};

/** A Standard Webhooks header, under its own name or svix's. */
function standardHeader(headers: HeaderBag, part: 'id' | 'timestamp' | 'signature'): string | undefined {
  return header(headers, `webhook-${part}`) ?? header(headers, `svix-${part}`);
}

function verifyStandardWebhooks(headers: HeaderBag, rawBody: Buffer, secret: string): void {
  const id = standardHeader(headers, 'id');
  const timestamp = standardHeader(headers, 'timestamp');
  const signatures = standardHeader(headers, 'signature');
  if (!id || !timestamp || !signatures) {
    throw unauthorized(true, 'Webhook signature missing: send X-Webhook-Signature or the webhook-id, webhook-timestamp and webhook-signature headers.');
  }
  // Checked first so a stale delivery is told so in the words the other sources use.
  assertFresh(timestamp, Date.now(), 'webhook-timestamp');
  const unbranded = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures };
  try {
    new Webhook(standardWebhooksKey(secret), { format: 'raw' }).verify(rawBody, unbranded, { jsonParse: false });
  } catch {
    // The library throws for a wrong signature and for a key it cannot use: both are a refusal.
    throw unauthorized(false, 'Webhook signature does not match the body.');
  }
}

/**
 * The Standard Webhooks key: the base64 after `whsec_` (or the whole secret without it),
 * read leniently so a secret that is not strict base64 keeps the key it always had.
 */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}
