import { header, HeaderBag, hmacHex, safeEqual, unauthorized, WebhookSourceAdapter } from './source';

/** Git forges (GitHub, Gitea, Forgejo): `sha256=<hex HMAC(body)>`, event and delivery in headers. */
export const forgeSource: WebhookSourceAdapter<'forge'> = {
  name: 'forge',
  secretSetting: 'FORGE_WEBHOOK_SECRET',
  detect: (headers) => Boolean(forgeEvent(headers)),
  verify(headers, rawBody, secret) {
    const given = header(headers, 'x-forge-signature-256') ?? header(headers, 'x-hub-signature-256');
    if (!given) throw unauthorized(true, 'Forge signature missing: X-Forge-Signature-256 or X-Hub-Signature-256 is required.');
    if (!safeEqual(given, `sha256=${hmacHex(secret, rawBody)}`)) throw unauthorized(false, 'Forge signature does not match the body.');
  },
  event: (headers) => forgeEvent(headers),
  deliveryId: (headers) => header(headers, 'x-forge-delivery') ?? header(headers, 'x-github-delivery') ?? null,
};

function forgeEvent(headers: HeaderBag): string | undefined {
  return header(headers, 'x-forge-event') ?? header(headers, 'x-github-event');
}
