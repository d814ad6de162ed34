import { assertFresh, header, hmacHex, safeEqual, unauthorized, WebhookSourceAdapter } from './source';

/** Chat apps (Slack's scheme): `v0=<hex HMAC("v0:" + ts + ":" + body)>`, ids in the payload. */
export const chatSource: WebhookSourceAdapter<'chat'> = {
  name: 'chat',
  secretSetting: 'CHAT_SIGNING_SECRET',
  detect: (headers) => Boolean(header(headers, 'x-chat-signature') || header(headers, 'x-slack-signature')),
  verify(headers, rawBody, secret, nowMs) {
    const given = header(headers, 'x-chat-signature') ?? header(headers, 'x-slack-signature');
    const timestamp = header(headers, 'x-chat-request-timestamp') ?? header(headers, 'x-slack-request-timestamp');
    if (!given || !timestamp) {
      throw unauthorized(true, 'Chat signature missing: X-Chat-Signature and X-Chat-Request-Timestamp are required.');
    }
    assertFresh(timestamp, nowMs, 'Chat request timestamp');
    if (!safeEqual(given, `v0=${hmacHex(secret, `v0:${timestamp}:`, rawBody)}`)) {
      throw unauthorized(false, 'Chat signature does not match the body.');
    }
  },
  event: () => undefined,
  deliveryId(_headers, payload) {
    return typeof payload.event_id === 'string' && payload.event_id !== '' ? payload.event_id : null;
  },
  handshake: (payload) => (payload.type === 'url_verification' ? { challenge: payload.challenge } : null),
};
