import * as oauth from 'oauth4webapi';
import { http, HttpAnswer } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

describe('POST /api/v1/oauth/token/ (RFC 6749 4.4 and 5.2)', () => {
  let system: TestSystem;
  let client: { client_id: string; client_secret: string };
  const tokenUrl = () => `${system.controllerUrl}/api/v1/oauth/token/`;
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
  const form = (params: Record<string, string>, headers: Record<string, string> = {}) =>
    http('POST', tokenUrl(), { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });

  const expectOAuthError = (answer: HttpAnswer, status: number, error: string) => {
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual({ error, error_description: expect.any(String) });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('pragma')).toBe('no-cache');
  };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    const created = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, {
      headers: { authorization: `Token ${system.apiToken}` },
      json: { name: 'orchestrator', scopes: ['tasks:read', 'tasks:write'] },
    });
    client = created.body;
  });
  afterAll(() => system?.close());

  it('issues a token to a library client authenticating in the body (client_secret_post)', async () => {
    const issuer: oauth.AuthorizationServer = { issuer: system.controllerUrl, token_endpoint: tokenUrl() };
    const libraryClient: oauth.Client = { client_id: client.client_id };
    const response = await oauth.clientCredentialsGrantRequest(
      issuer, libraryClient, oauth.ClientSecretPost(client.client_secret), new URLSearchParams({ scope: 'tasks:write' }),
      { [oauth.allowInsecureRequests]: true },
    );
    const token = await oauth.processClientCredentialsResponse(issuer, libraryClient, response);
    expect(token.scope).toBe('tasks:write');
    expect(token.access_token).toMatch(/^atc_at_/);
  });

  it('lets the library read refusals: a Basic challenge on 401, the RFC 5.2 body on 400', async () => {
    const issuer: oauth.AuthorizationServer = { issuer: system.controllerUrl, token_endpoint: tokenUrl() };
    const libraryClient: oauth.Client = { client_id: client.client_id };
    const options = { [oauth.allowInsecureRequests]: true };
    const wrongSecret = await oauth.clientCredentialsGrantRequest(issuer, libraryClient, oauth.ClientSecretBasic('wrong'), new URLSearchParams(), options);
    await expect(oauth.processClientCredentialsResponse(issuer, libraryClient, wrongSecret)).rejects.toMatchObject({
      status: 401,
      cause: [expect.objectContaining({ scheme: 'basic' })],
    });
    const wrongScope = await oauth.clientCredentialsGrantRequest(
      issuer, libraryClient, oauth.ClientSecretBasic(client.client_secret), new URLSearchParams({ scope: 'skills:read' }), options,
    );
    await expect(oauth.processClientCredentialsResponse(issuer, libraryClient, wrongScope)).rejects.toMatchObject({
      error: 'invalid_scope',
      status: 400,
    });
  });

  it('answers invalid_request for a missing grant_type', async () => {
    expectOAuthError(await form({}, basic(client.client_id, client.client_secret)), 400, 'invalid_request');
  });

  it('answers unsupported_grant_type for another grant', async () => {
    const answer = await form({ grant_type: 'password', username: 'u', password: 'p' }, basic(client.client_id, client.client_secret));
    expectOAuthError(answer, 400, 'unsupported_grant_type');
  });

  it('answers 401 invalid_client with a Basic challenge for a wrong secret over Basic', async () => {
    const answer = await form({ grant_type: 'client_credentials' }, basic(client.client_id, 'wrong'));
    expectOAuthError(answer, 401, 'invalid_client');
    expect(answer.headers.get('www-authenticate')).toBe('Basic realm="oauth"');
  });

  it.each([
    ['an unknown client', { client_id: '00000000-0000-4000-8000-000000000000', client_secret: 'x' }],
    ['a client_id that is no UUID', { client_id: 'nobody', client_secret: 'x' }],
    ['no client credentials at all', {}],
  ])('answers 401 invalid_client for %s', async (_name, credentials) => {
    expectOAuthError(await form({ grant_type: 'client_credentials', ...credentials }), 401, 'invalid_client');
  });

  it('answers invalid_request when the client authenticates two ways at once', async () => {
    const answer = await form({ grant_type: 'client_credentials', client_secret: client.client_secret }, basic(client.client_id, client.client_secret));
    expectOAuthError(answer, 400, 'invalid_request');
  });

  it.each([
    ['a scope the client does not hold', 'tasks:read skills:write'],
    ['a scope that does not exist', 'tasks:everything'],
  ])('answers invalid_scope for %s', async (_name, scope) => {
    const answer = await form({ grant_type: 'client_credentials', scope }, basic(client.client_id, client.client_secret));
    expectOAuthError(answer, 400, 'invalid_scope');
  });

  it('answers a JSON request like a form request', async () => {
    const answer = await http('POST', tokenUrl(), { json: { grant_type: 'client_credentials', scope: ['tasks:read'] }, headers: basic(client.client_id, client.client_secret) });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: 'tasks:read' });
  });
});
