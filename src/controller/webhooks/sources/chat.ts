import { assertFresh, header, hmacHex, safeEqual, unauthorized, WebhookSourceAdapter } from './source';

/**
 * Chat apps (Slack's scheme): `v0=<hex HMAC("v0:" + ts + ":" + body)>`, ids in the payload.
 * Written here rather than taken from @slack/bolt: Bolt's verifier comes only with the whole
 * app framework (its web client, HTTP server and receivers), reads only Slack's header names,
 * and the check is one HMAC compared in constant time. Its spec checks deliveries against
 * Bolt's `isValidSlackRequest`.
 */
export const chatSource: WebhookSourceAdapter<'chat'> = {
  name: 'chat',
  secretSetting: 'CHAT_SIGNING_SECRET',
  detect: (headers) => Boolean(header(headers, 'x-chat-signature') || header(headers, 'x-slack-signature')),
  verify(headers, rawBody, secret) {
    const given = header(headers, 'x-chat-signature') ?? header(headers, 'x-slack-signature');
    const timestamp = header(headers, 'x-chat-request-timestamp') ?? header(headers, 'x-slack-request-timestamp');
    if (!given || !timestamp) {
      throw unauthorized(true, 'Chat signature missing: X-Chat-Signature and X-Chat-Request-Timestamp are required.');
    }
    assertFresh(timestamp, Date.now(), 'Chat request timestamp');
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
