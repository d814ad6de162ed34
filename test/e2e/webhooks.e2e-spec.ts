import { randomBytes } from 'node:crypto';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow, pushPayload, sendWebhook, SignedWebhook, signedWebhook, Source } from '../harness/webhooks';

const secrets = {
  forge: 'forge-secret-' + randomBytes(8).toString('hex'),
  chat: 'chat-secret-' + randomBytes(8).toString('hex'),
  custom: `whsec_${randomBytes(24).toString('base64')}`,
};

const chatEvent = (eventId: string) => ({
  type: 'event_callback',
  event_id: eventId,
  team_id: 'T1',
  event: { type: 'app_mention', channel: 'C1', text: 'deploy please' },
});

const payloads: Record<Source, object> = {
  forge: pushPayload(),
  chat: chatEvent('Ev01'),
  custom: { type: 'invoice.paid', data: { customer: 'acme' } },
};

/** The same delivery with one byte of its body changed (the last letter's case flipped). */
function tamper(webhook: SignedWebhook): SignedWebhook {
  const at = webhook.body.search(/[a-z][^a-z]*$/);
  return { ...webhook, body: webhook.body.slice(0, at) + webhook.body[at].toUpperCase() + webhook.body.slice(at + 1) };
}

describe('webhook ingest: signatures and refusals', () => {
  let system: TestSystem;
  let auth: Record<string, string>;

  beforeAll(async () => {
    system = await startTestSystem({
      role: 'controller',
      env: { FORGE_WEBHOOK_SECRET: secrets.forge, CHAT_SIGNING_SECRET: secrets.chat, CUSTOM_WEBHOOK_SECRET: secrets.custom },
    });
    auth = { authorization: `Token ${system.apiToken}` };
    const workflows = [
      makeWorkflow('forge-push'),
      makeWorkflow('chat-mention', {}, { source: 'chat', event: 'event_callback', filter: { 'event.type': 'app_mention' } }),
      makeWorkflow('custom-invoice', {}, { source: 'custom', event: 'invoice.paid', filter: { 'data.customer': 'acme' } }),
    ];
    for (const workflow of workflows) expect((await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { json: workflow, headers: auth })).status).toBe(201);
  });
  afterAll(() => system?.close());

  const routes: Record<Source, string> = { forge: 'forge-push', chat: 'chat-mention', custom: 'custom-invoice' };

  it.each(['forge', 'chat', 'custom'] as Source[])('routes a %s delivery signed by the vendor library to its workflow', async (source) => {
    const answer = await sendWebhook(system.controllerUrl, await signedWebhook(source, payloads[source], { secret: secrets[source] }));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'ok', routed_to: routes[source], task_guid: expect.any(String) });
  });

  it.each(['forge', 'chat', 'custom'] as Source[])('refuses a %s delivery with one byte changed, or signed with the wrong secret', async (source) => {
    const signed = await signedWebhook(source, payloads[source], { secret: secrets[source] });
    const tampered = await sendWebhook(system.controllerUrl, tamper(signed));
    expect(tampered.status).toBe(401);
    expect(tampered.body.code).toBe('authentication_failed');
    expect(tampered.headers.get('www-authenticate')).toBeTruthy();
    const wrongSecret = source === 'custom' ? `whsec_${randomBytes(24).toString('base64')}` : 'wrong-secret';
    expect((await sendWebhook(system.controllerUrl, await signedWebhook(source, payloads[source], { secret: wrongSecret }))).status).toBe(401);
    expect((await sendWebhook(system.controllerUrl, await signedWebhook(source, payloads[source]))).status).toBe(401);
  });

  it.each(['chat', 'custom'] as Source[])('refuses a %s delivery whose timestamp is more than 300 s old', async (source) => {
    const old = await signedWebhook(source, payloads[source], { secret: secrets[source], ageSeconds: 400 });
    expect((await sendWebhook(system.controllerUrl, old)).status).toBe(401);
  });

  it('answers the chat url_verification challenge once the request is verified', async () => {
    const challenge = { type: 'url_verification', token: 't', challenge: 'c-' + randomBytes(6).toString('hex') };
    const answer = await sendWebhook(system.controllerUrl, await signedWebhook('chat', challenge, { secret: secrets.chat }));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ challenge: challenge.challenge });
    expect((await sendWebhook(system.controllerUrl, tamper(await signedWebhook('chat', challenge, { secret: 'wrong' })))).status).toBe(401);
  });

  it('takes a forge delivery form-encoded as payload=<json>, verifying the form bytes', async () => {
    const signed = await signedWebhook('forge', pushPayload(), { secret: secrets.forge });
    const form = `payload=${encodeURIComponent(signed.body)}`;
    const { sign } = await import('@octokit/webhooks-methods');
    const headers = { ...signed.headers, 'content-type': 'application/x-www-form-urlencoded', 'x-hub-signature-256': await sign(secrets.forge, form) };
    const answer = await sendWebhook(system.controllerUrl, { headers, body: form });
    expect(answer.status).toBe(200);
    expect(answer.body.routed_to).toBe('forge-push');
  });

  it('refuses a delivery whose source cannot be told with 400', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { json: { a: 1 } });
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toHaveProperty(['X-Webhook-Source']);
    const unknown = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { json: { a: 1 }, headers: { 'x-webhook-source': 'pager' } });
    expect(unknown.status).toBe(400);
  });

  it('refuses a body over the limit with 413 and keeps nothing', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(system.config.maxJsonBytes) });
    const answer = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, {
      body: big,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push' },
    });
    expect(answer.status).toBe(413);
  });

  it('keeps every refusal in the ledger with the reason', async () => {
    const ledger = await http('GET', `${system.controllerUrl}/api/v1/webhooks/deliveries/?outcome=rejected&source=forge&limit=500`, { headers: auth });
    expect(ledger.status).toBe(200);
    expect(ledger.body.count).toBeGreaterThanOrEqual(3);
    expect(ledger.body.results[0]).toMatchObject({ source: 'forge', verified: false, status_code: 401, error: expect.stringContaining('signature') });
  });
});

describe('webhook ingest in production without secrets', () => {
  it('refuses unsigned deliveries with 403 naming the setting', async () => {
    const system = await startTestSystem({ role: 'controller', env: { NODE_ENV: 'production' } });
    try {
      const answer = await sendWebhook(system.controllerUrl, await signedWebhook('custom', payloads.custom));
      expect(answer.status).toBe(403);
      expect(answer.body.detail).toContain('CUSTOM_WEBHOOK_SECRET');
    } finally {
      await system.close();
    }
  });
});
