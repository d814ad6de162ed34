import * as oauth from 'oauth4webapi';
import { Client } from 'pg';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

describe('OAuth 2.0 client credentials', () => {
  let system: TestSystem;
  let operator: Record<string, string>;
  const url = (path: string) => `${system.controllerUrl}${path}`;

  const createClient = async (scopes: string[], name = 'orchestrator') => {
    const answer = await http('POST', url('/api/v1/oauth/clients/'), { headers: operator, json: { name, scopes } });
    expect(answer.status).toBe(201);
    return answer.body as { client_id: string; client_secret: string };
  };

  /** A token obtained the way an orchestrator would: with a real OAuth client library. */
  const libraryToken = async (clientId: string, secret: string, scope?: string) => {
    const issuer: oauth.AuthorizationServer = { issuer: system.controllerUrl, token_endpoint: url('/api/v1/oauth/token/') };
    const client: oauth.Client = { client_id: clientId };
    const response = await oauth.clientCredentialsGrantRequest(
      issuer, client, oauth.ClientSecretBasic(secret), new URLSearchParams(scope ? { scope } : {}),
      { [oauth.allowInsecureRequests]: true },
    );
    return oauth.processClientCredentialsResponse(issuer, client, response);
  };

  const whoami = (token: string) => http('GET', url('/api/v1/auth/whoami/'), { headers: { authorization: `Bearer ${token}` } });

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    operator = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('issues a token to a library client and accepts it with the granted scopes', async () => {
    const { client_id, client_secret } = await createClient(['tasks:read', 'tasks:write', 'skills:read']);
    const token = await libraryToken(client_id, client_secret, 'tasks:read skills:read');
    expect(token).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'tasks:read skills:read' });
    const me = await whoami(token.access_token);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ kind: 'client', id: client_id, name: 'orchestrator', scopes: ['tasks:read', 'skills:read'] });
  });

  it('opens the feature endpoints named by the token scopes, and only those', async () => {
    const { client_id, client_secret } = await createClient(['tasks:read', 'dispatchers:read']);
    const token = await libraryToken(client_id, client_secret, 'tasks:read');
    const bearer = { authorization: `Bearer ${token.access_token}` };
    expect((await http('GET', url('/api/v1/tasks/'), { headers: bearer })).status).toBe(200);
    const refused = await http('GET', url('/api/v1/dispatchers/'), { headers: bearer });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('permission_denied');
  });

  it('grants every scope of the client when none is asked for', async () => {
    const { client_id, client_secret } = await createClient(['dispatchers:write', 'dispatchers:read']);
    const token = await libraryToken(client_id, client_secret);
    expect(token.scope).toBe('dispatchers:write dispatchers:read');
  });

  it('accepts a JSON body with client_id and client_secret, answering no-store', async () => {
    const { client_id, client_secret } = await createClient(['webhooks:read']);
    const answer = await http('POST', url('/api/v1/oauth/token'), {
      json: { grant_type: 'client_credentials', client_id, client_secret, scope: 'webhooks:read' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'webhooks:read' });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('pragma')).toBe('no-cache');
  });

  it('refuses the token of a deleted client at once, and a second delete is 404', async () => {
    const { client_id, client_secret } = await createClient(['tasks:read']);
    const token = await libraryToken(client_id, client_secret);
    expect((await whoami(token.access_token)).status).toBe(200);
    const deleted = await http('DELETE', url(`/api/v1/oauth/clients/${client_id}/`), { headers: operator });
    expect(deleted.status).toBe(204);
    const refused = await whoami(token.access_token);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('authentication_failed');
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await http('DELETE', url(`/api/v1/oauth/clients/${client_id}/`), { headers: operator })).status).toBe(404);
  });

  it('refuses an expired access token', async () => {
    const { client_id, client_secret } = await createClient(['tasks:read']);
    const token = await libraryToken(client_id, client_secret);
    const db = new Client({ connectionString: system.config.databaseUrl! });
    await db.connect();
    try {
      await db.query(`UPDATE "controller"."oauth_access_tokens" SET expires_at = now() - interval '1 second' WHERE client_id = $1`, [client_id]);
    } finally {
      await db.end();
    }
    const answer = await whoami(token.access_token);
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('authentication_failed');
  });

  it('refuses a made-up bearer token', async () => {
    const answer = await whoami('atc_at_made-up');
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('authentication_failed');
  });
});
