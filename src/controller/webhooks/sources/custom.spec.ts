import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { detectSource } from '../webhook-signatures';
import { chatSource } from './chat';
import { customSource } from './custom';

const NOW = 1_760_000_000_000;
const secret = `whsec_${randomBytes(24).toString('base64')}`;
const body = Buffer.from(JSON.stringify({ type: 'invoice.paid' }));

/** A delivery signed by the Standard Webhooks library, under svix's header names. */
function svixDelivery(): Record<string, string> {
  const timestamp = Math.floor(NOW / 1000);
  const signature = new Webhook(secret).sign('msg_svix', new Date(timestamp * 1000), body.toString());
  return { 'svix-id': 'msg_svix', 'svix-timestamp': String(timestamp), 'svix-signature': signature };
}

describe('custom source, svix headers and the chat handshake', () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it('takes a delivery with svix or Standard Webhooks headers and no X-Webhook-Source as custom', () => {
    expect(detectSource(svixDelivery())).toBe('custom');
    expect(detectSource({ 'webhook-id': 'msg_1', 'webhook-signature': 'v1,x' })).toBe('custom');
  });

  it('verifies the svix headers like the Standard Webhooks ones, and reads its delivery id', () => {
    const headers = svixDelivery();
    expect(() => customSource.verify(headers, body, secret)).not.toThrow();
    expect(() => customSource.verify(headers, Buffer.from(`${body} `), secret)).toThrow('does not match');
    expect(customSource.deliveryId(headers, {})).toBe('msg_svix');
  });

  it('answers the chat url_verification handshake with its challenge, and nothing else', () => {
    expect(chatSource.handshake?.({ type: 'url_verification', challenge: 'c-1' })).toEqual({ challenge: 'c-1' });
    expect(chatSource.handshake?.({ type: 'event_callback' })).toBeNull();
  });
});
