import { createHmac, randomBytes } from 'node:crypto';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { pushPayload, signedWebhook } from '../harness/webhooks';

/**
 * Webhook ingest and task callbacks are served ahead of Express for JSON bodies (the hot
 * lane) and by the Nest routes otherwise: a client sees one endpoint either way. The same
 * requests down both paths, compared answer by answer: hot-lane-differential.e2e-spec.ts.
 */
describe('the hot lane and the Nest routes answer alike', () => {
  const secret = 'forge-secret-' + randomBytes(8).toString('hex');
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { FORGE_WEBHOOK_SECRET: secret } });
  });
  afterAll(() => system?.close());

  const post = (path: string, headers: Record<string, string>, body: string) => http('POST', `${system.controllerUrl}${path}`, { headers, body });

  it('takes a JSON delivery on any spelling Express takes, and a form delivery through the Nest route, with the same answer', async () => {
    for (const path of ['/api/v1/webhooks/', '/api/v1/webhooks', '/API/V1/Webhooks/', '/api/v1/webhooks/?source=forge']) {
      const signed = await signedWebhook('forge', pushPayload('lane/json'), { secret });
      const answer = await post(path, { ...signed.headers, 'x-request-id': `lane-${path.length}` }, signed.body);
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({ status: 'ignored', routed_to: null });
      expect(answer.headers.get('x-request-id')).toBe(`lane-${path.length}`);
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
    const signed = await signedWebhook('forge', pushPayload('lane/form'), { secret });
    const form = `payload=${encodeURIComponent(signed.body)}`;
    const headers = { ...signed.headers, 'content-type': 'application/x-www-form-urlencoded', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(form).digest('hex')}` };
    const viaNest = await post('/api/v1/webhooks/', headers, form);
    expect(viaNest.status).toBe(202);
    expect(viaNest.body).toEqual({ status: 'ignored', routed_to: null });
  });

  it('keeps the contract shape for a refusal on the lane (bad signature) and on the Nest route (a charset it cannot read)', async () => {
    const signed = await signedWebhook('forge', pushPayload('lane/bad'), { secret: 'not-the-secret' });
    const lane = await post('/api/v1/webhooks/', signed.headers, signed.body);
    const nest = await post('/api/v1/webhooks/', { ...signed.headers, 'content-type': 'application/vnd.forge+json; charset=latin1' }, signed.body);
    expect(lane.status).toBe(401);
    expect(lane.body).toMatchObject({ code: expect.any(String), detail: expect.any(String) });
    expect(nest.status).toBe(415);
    expect(nest.body).toMatchObject({ code: 'unsupported_media_type' });
    const callback = await post(`/api/v1/tasks/${crypto.randomUUID()}/callback/`, { 'content-type': 'application/json', authorization: 'Bearer nope' }, '{"status":"completed"}');
    expect(callback.status).toBe(404);
    expect(callback.body).toEqual({ detail: expect.any(String), code: 'not_found' });
    const broken = await post('/api/v1/webhooks/', { 'content-type': 'application/json' }, '{"ref":');
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ code: 'parse_error' });
  });

  it('counts lane requests under their route pattern in the metrics', async () => {
    await post(`/api/v1/tasks/${crypto.randomUUID()}/progress/`, { 'content-type': 'application/json', authorization: 'Bearer nope' }, '{"percentage":1}');
    const metrics = await http('GET', `${system.controllerUrl}/metrics`);
    expect(metrics.text).toMatch(/http_requests_total\{role="controller",method="POST",route="\/api\/v1\/webhooks",status="202"\} \d+/);
    expect(metrics.text).toMatch(/http_requests_total\{role="controller",method="POST",route="\/api\/v1\/tasks\/:guid\/progress",status="404"\} \d+/);
    expect(metrics.text).not.toMatch(/route="\/api\/v1\/tasks\/[0-9a-f]{8}-/);
  });
});
