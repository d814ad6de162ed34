import * as oauth from 'oauth4webapi';
import { SCOPES } from '../../src/controller/auth/scopes';
import { operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/** RFC 8414 metadata, as an OAuth client library discovers and uses it. */
describe('OAuth authorization server metadata', () => {
  let system: TestSystem;
  const insecure = { [oauth.allowInsecureRequests]: true };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
  });
  afterAll(() => system?.close());

  const discover = async (): Promise<oauth.AuthorizationServer> => {
    const issuer = new URL(system.config.publicUrl);
    const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
    return oauth.processDiscoveryResponse(issuer, response);
  };

  it('is found by discovery and names the issuer, the token endpoint, the grant, the client methods and the scopes', async () => {
    const server = await discover();
    expect(server).toEqual({
      issuer: system.config.publicUrl,
      token_endpoint: `${system.config.publicUrl}/api/v1/oauth/token/`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...SCOPES],
      response_types_supported: [],
    });
  });

  it.each([
    ['client_secret_basic', oauth.ClientSecretBasic],
    ['client_secret_post', oauth.ClientSecretPost],
  ])('gives a token endpoint a library client gets a token from with %s', async (_method, authentication) => {
    const server = await discover();
    const created = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, {
      headers: operator(system),
      json: { name: 'discovered', scopes: ['tasks:read'] },
    });
    const client: oauth.Client = { client_id: created.body.client_id };
    const response = await oauth.clientCredentialsGrantRequest(
      server, client, authentication(created.body.client_secret), new URLSearchParams({ scope: 'tasks:read' }), insecure,
    );
    const token = await oauth.processClientCredentialsResponse(server, client, response);
    expect(token.scope).toBe('tasks:read');
    const tasks = await http('GET', `${system.controllerUrl}/api/v1/tasks/`, { headers: { authorization: `Bearer ${token.access_token}` } });
    expect(tasks.status).toBe(200);
  });

  it('needs no credential and may be cached', async () => {
    const answer = await http('GET', `${system.controllerUrl}/.well-known/oauth-authorization-server`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('cache-control')).toBe('public, max-age=3600');
  });
});
