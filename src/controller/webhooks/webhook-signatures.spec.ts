import { createHmac, randomBytes } from 'node:crypto';
import { sign as signForge } from '@octokit/webhooks-methods';
import { isValidSlackRequest } from '@slack/bolt';
import { Webhook } from 'standardwebhooks';
import { DomainError } from '../../shared/errors/domain-error';
import { HeaderBag, verifyWebhookSignature, WebhookSecrets, WebhookSource } from './webhook-signatures';

const NOW = 1_760_000_000_000;
const secrets: WebhookSecrets = {
  forge: 'forge-secret',
  chat: 'chat-signing-secret',
  custom: `whsec_${randomBytes(24).toString('base64')}`,
};
const body = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'acme/app' } });

interface SignedWebhook {
  source: WebhookSource;
  headers: HeaderBag;
  rawBody: Buffer;
}

/** A delivery signed by the sender's own library, as the vendor would send it. */
async function signedWebhook(source: WebhookSource, options: { secret?: string; ageSeconds?: number } = {}): Promise<SignedWebhook> {
  const secret = options.secret ?? secrets[source]!;
  const timestampSec = Math.floor(NOW / 1000) - (options.ageSeconds ?? 0);
  if (source === 'forge') {
    return { source, rawBody: Buffer.from(body), headers: { 'x-github-event': 'push', 'x-hub-signature-256': await signForge(secret, body) } };
  }
  if (source === 'chat') {
    // Slack's documented scheme; checked against Bolt's own verifier before use.
    const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestampSec}:${body}`).digest('hex')}`;
    const boltAccepts = isValidSlackRequest({
      signingSecret: secret,
      body,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestampSec },
      nowMilliseconds: timestampSec * 1000,
    });
    expect(boltAccepts).toBe(true);
    return { source, rawBody: Buffer.from(body), headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': String(timestampSec) } };
  }
  const signature = new Webhook(secret).sign('msg_1', new Date(timestampSec * 1000), body);
  return {
    source,
    rawBody: Buffer.from(body),
    headers: { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestampSec), 'webhook-signature': signature },
  };
}

function verify(delivery: SignedWebhook, overrides: Partial<{ secrets: WebhookSecrets; production: boolean }> = {}): Promise<boolean> {
  return verifyWebhookSignature({ ...delivery, secrets, production: false, ...overrides });
}

async function refusal(run: () => Promise<unknown>): Promise<{ status: number; code: string; message: string }> {
  try {
    await run();
  } catch (error) {
    if (error instanceof DomainError) return { status: error.status, code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

function tamperOneByte(buffer: Buffer): Buffer {
  const copy = Buffer.from(buffer);
  copy[5] ^= 0x01;
  return copy;
}

const SOURCES: WebhookSource[] = ['forge', 'chat', 'custom'];

describe('webhook signatures', () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it.each(SOURCES)('accepts a %s delivery signed by the vendor library', async (source) => {
    expect(await verify(await signedWebhook(source))).toBe(true);
  });

  it.each(SOURCES)('refuses a %s delivery with one byte of the body changed', async (source) => {
    const delivery = await signedWebhook(source);
    expect((await refusal(() => verify({ ...delivery, rawBody: tamperOneByte(delivery.rawBody) }))).status).toBe(401);
  });

  it.each(SOURCES)('refuses a %s delivery signed with the wrong secret', async (source) => {
    const wrong = source === 'custom' ? `whsec_${randomBytes(24).toString('base64')}` : 'not-the-secret';
    const delivery = await signedWebhook(source, { secret: wrong });
    expect((await refusal(() => verify(delivery))).status).toBe(401);
  });

  it.each(['chat', 'custom'] as WebhookSource[])('refuses a %s delivery whose timestamp is older than 300 s', async (source) => {
    expect(await verify(await signedWebhook(source, { ageSeconds: 299 }))).toBe(true);
    const old = await signedWebhook(source, { ageSeconds: 301 });
    expect(await refusal(() => verify(old))).toMatchObject({ status: 401, code: 'authentication_failed' });
  });

  it.each(SOURCES)('refuses a %s delivery with no signature when the secret is set', async (source) => {
    const delivery = { source, rawBody: Buffer.from(body), headers: {} };
    expect(await refusal(() => verify(delivery))).toMatchObject({ status: 401, code: 'not_authenticated' });
  });

  it('accepts the forge X-Forge-Signature-256 and chat X-Chat-* header names', async () => {
    const forge = await signedWebhook('forge');
    expect(await verify({ ...forge, headers: { 'x-forge-signature-256': forge.headers['x-hub-signature-256'] } })).toBe(true);
    const chat = await signedWebhook('chat');
    const headers = { 'x-chat-signature': chat.headers['x-slack-signature'], 'x-chat-request-timestamp': chat.headers['x-slack-request-timestamp'] };
    expect(await verify({ ...chat, headers })).toBe(true);
  });

  it('accepts custom X-Webhook-Signature keyed with the secret bytes, and several Standard Webhooks signatures', async () => {
    const hex = createHmac('sha256', secrets.custom!).update(body).digest('hex');
    expect(await verify({ source: 'custom', rawBody: Buffer.from(body), headers: { 'x-webhook-signature': `sha256=${hex}` } })).toBe(true);
    const delivery = await signedWebhook('custom');
    const rotated = `v1,${randomBytes(32).toString('base64')} ${delivery.headers['webhook-signature']}`;
    expect(await verify({ ...delivery, headers: { ...delivery.headers, 'webhook-signature': rotated } })).toBe(true);
  });

  it('takes unsigned deliveries when no secret is set, but not in production', async () => {
    const unsigned = { source: 'forge' as const, rawBody: Buffer.from(body), headers: {} };
    const none = { forge: null, chat: null, custom: null };
    expect(await verify(unsigned, { secrets: none })).toBe(false);
    expect(await refusal(() => verify(unsigned, { secrets: none, production: true }))).toMatchObject({
      status: 403,
      message: expect.stringContaining('FORGE_WEBHOOK_SECRET'),
    });
  });
});


describe('webhook signatures at the edges', () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it('refuses a forge signature over an empty body with 401, not a crash', async () => {
    const delivery = { source: 'forge' as const, rawBody: Buffer.alloc(0), headers: { 'x-hub-signature-256': 'sha256=00' } };
    expect(await refusal(() => verify(delivery))).toMatchObject({ status: 401, code: 'authentication_failed' });
  });

  it('refuses a forge signature in another algorithm or of another length', async () => {
    const forge = await signedWebhook('forge');
    const sha1 = `sha1=${createHmac('sha1', secrets.forge!).update(body).digest('hex')}`;
    expect((await refusal(() => verify({ ...forge, headers: { 'x-hub-signature-256': sha1 } }))).status).toBe(401);
  });

  it('verifies svix-* headers with the secret as its whsec_ key, and refuses a timestamp from the future', async () => {
    const delivery = await signedWebhook('custom');
    const svix = { 'svix-id': 'msg_1', 'svix-timestamp': delivery.headers['webhook-timestamp'], 'svix-signature': delivery.headers['webhook-signature'] };
    expect(await verify({ ...delivery, headers: svix })).toBe(true);
    const ahead = await signedWebhook('custom', { ageSeconds: -301 });
    expect(await refusal(() => verify(ahead))).toMatchObject({ status: 401, message: expect.stringContaining('webhook-timestamp') });
  });

  it('refuses Standard Webhooks signatures of another version or that are not base64', async () => {
    const delivery = await signedWebhook('custom');
    const v1a = String(delivery.headers['webhook-signature']).replace('v1,', 'v1a,');
    for (const signature of [v1a, 'v1,%%%', 'v1']) {
      expect((await refusal(() => verify({ ...delivery, headers: { ...delivery.headers, 'webhook-signature': signature } }))).status).toBe(401);
    }
  });
});
