import { randomBytes } from 'node:crypto';
import { http, HttpAnswer } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * AUTH_FAILURE_LIMIT=3 and OAUTH_TOKEN_RATE_LIMIT=4; TRUST_PROXY lets each test speak
 * from addresses of its own through X-Forwarded-For.
 */
describe('throttling of authentication, shared by replicas', () => {
  const prefix = `atc-throttle-${randomBytes(4).toString('hex')}:`;
  const env = { AUTH_FAILURE_LIMIT: '3', OAUTH_TOKEN_RATE_LIMIT: '4', TRUST_PROXY: 'true', CACHE_PREFIX: prefix };
  let first: TestSystem;
  let second: TestSystem;

  const from = (address: string, headers: Record<string, string> = {}) => ({ 'x-forwarded-for': address, ...headers });
  const whoami = (system: TestSystem, address: string, authorization: string) =>
    http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: from(address, { authorization }) });
  const token = (address: string, clientId: string, secret: string) =>
    http('POST', `${first.controllerUrl}/api/v1/oauth/token/`, {
      headers: from(address),
      json: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
    });
  const newClient = async () =>
    (await http('POST', `${first.controllerUrl}/api/v1/oauth/clients/`, {
      headers: from('10.9.9.9', { authorization: `Token ${first.apiToken}` }),
      json: { name: 'throttled', scopes: ['tasks:read'] },
    })).body as { client_id: string; client_secret: string };

  const expectThrottled = (answer: HttpAnswer, windowSeconds: number) => {
    expect(answer.status).toBe(429);
    expect(answer.body.code).toBe('throttled');
    const retryAfter = Number(answer.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  };

  beforeAll(async () => {
    first = await startTestSystem({ role: 'controller', env });
    second = await startTestSystem({ role: 'controller', env: { ...env, API_TOKEN: first.apiToken }, databaseUrl: first.config.databaseUrl! });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('throttles the failures of an address after repeated ones, only that address, and still takes a right token', async () => {
    for (let i = 0; i < 3; i++) expect((await whoami(first, '10.1.0.1', 'Token wrong')).status).toBe(401);
    expectThrottled(await whoami(first, '10.1.0.1', 'Token wrong-again'), 60);
    expect((await whoami(first, '10.1.0.1', `Token ${first.apiToken}`)).status).toBe(200);
    expect((await whoami(first, '10.1.0.2', 'Token wrong')).status).toBe(401);
  });

  it('does not count requests without credentials as failures', async () => {
    for (let i = 0; i < 5; i++) expect((await http('GET', `${first.controllerUrl}/api/v1/auth/whoami/`, { headers: from('10.1.1.1') })).status).toBe(401);
    expect((await whoami(first, '10.1.1.1', `Token ${first.apiToken}`)).status).toBe(200);
  });

  // Replicas share counts through Redis; the in-memory fallback is one process's own. It is
  // skipped only on a machine with no Redis (the harness prints that it fell back); in CI,
  // where .ci/run starts Redis, it always runs and a missing Redis fails it.
  const withRedis = process.env.ATC_TEST_REDIS_URL || process.env.CI ? it : it.skip;
  withRedis('blocks an address on every replica at once', async () => {
    for (let i = 0; i < 3; i++) expect((await whoami(first, '10.5.0.1', 'Bearer wrong')).status).toBe(401);
    expectThrottled(await whoami(second, '10.5.0.1', 'Token wrong'), 60);
  });

  it('blocks a client whose secret is guessed from many addresses', async () => {
    const client = await newClient();
    for (let i = 1; i <= 3; i++) expect((await token(`10.2.0.${i}`, client.client_id, 'guess')).status).toBe(401);
    expectThrottled(await token('10.2.0.9', client.client_id, client.client_secret), 60);
  });

  it('limits token requests per client', async () => {
    const client = await newClient();
    for (let i = 1; i <= 4; i++) expect((await token(`10.3.0.${i}`, client.client_id, client.client_secret)).status).toBe(200);
    expectThrottled(await token('10.3.0.9', client.client_id, client.client_secret), 60);
  });

  it('limits token requests per address, whatever the client', async () => {
    const clients = [await newClient(), await newClient()];
    for (let i = 0; i < 4; i++) {
      const client = clients[i % 2];
      expect((await token('10.4.0.1', client.client_id, client.client_secret)).status).toBe(200);
    }
    expectThrottled(await token('10.4.0.1', clients[0].client_id, clients[0].client_secret), 60);
    expect((await token('10.4.0.2', clients[0].client_id, clients[0].client_secret)).status).toBe(200);
  });
});
