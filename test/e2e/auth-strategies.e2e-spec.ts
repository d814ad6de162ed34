import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The Passport strategies are per app, not per process: two systems booted in one process
 * (as replicas and the `all` role are) each check credentials against their own settings
 * and database.
 */
describe('Passport strategies, one set per app', () => {
  let first: TestSystem;
  let second: TestSystem;

  // Two whole systems booted one after the other: on a loaded two-core machine (a full CI run,
  // another suite's replicas beside it) that took more than the 60 s default once.
  beforeAll(async () => {
    first = await startTestSystem();
    second = await startTestSystem();
  }, 120_000);
  afterAll(async () => {
    await first?.close();
    await second?.close();
  });

  const whoami = (system: TestSystem, authorization: string) =>
    http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: { authorization } });

  it('takes each operator token on its own controller only', async () => {
    expect((await whoami(first, `Token ${first.apiToken}`)).status).toBe(200);
    expect((await whoami(second, `Token ${second.apiToken}`)).status).toBe(200);
    const crossed = await whoami(first, `Token ${second.apiToken}`);
    expect(crossed.status).toBe(401);
    expect(crossed.body).toMatchObject({ code: 'authentication_failed' });
    expect(crossed.headers.get('www-authenticate')).toBe('Token realm="api", Bearer realm="api"');
  });

  it('takes an OAuth access token only where its client was made', async () => {
    const client = await http('POST', `${first.controllerUrl}/api/v1/oauth/clients/`, {
      headers: { authorization: `Token ${first.apiToken}` },
      json: { name: 'strategies', scopes: ['tasks:read'] },
    });
    const token = await http('POST', `${first.controllerUrl}/api/v1/oauth/token/`, {
      json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
    });
    expect((await whoami(first, `Bearer ${token.body.access_token}`)).body).toMatchObject({ kind: 'client', name: 'strategies' });
    const crossed = await whoami(second, `Bearer ${token.body.access_token}`);
    expect(crossed.status).toBe(401);
    expect(crossed.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"');
  });

  it('takes each dispatcher API key on its own dispatcher only', async () => {
    const list = (system: TestSystem, key: string) => http('GET', `${system.dispatcherUrl}/tasks`, { headers: { 'x-api-key': key } });
    expect((await list(first, first.apiKey)).status).toBe(200);
    expect((await list(second, second.apiKey)).status).toBe(200);
    const crossed = await list(second, first.apiKey);
    expect(crossed.status).toBe(401);
    expect(crossed.body).toMatchObject({ ok: false, error: { code: 'authentication_failed' } });
    expect(crossed.headers.get('www-authenticate')).toBe('ApiKey header="X-API-Key"');
  });
});
