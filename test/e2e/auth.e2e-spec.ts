import { Controller, Get, Module } from '@nestjs/common';
import { CONTROLLER_FEATURES } from '../../src/controller/controller.module';
import { CurrentPrincipal, OperatorOnly, OperatorOrScope, Principal } from '../../src/controller/auth/auth.decorators';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/** Endpoints that exist only in this spec, so the guard is tested apart from any feature. */
@Controller('api/v1/auth-probe')
class ProbeController {
  @Get('skills-write')
  @OperatorOrScope('skills:write')
  scoped(@CurrentPrincipal() principal: Principal): Principal {
    return principal;
  }

  @Get('operators')
  @OperatorOnly()
  operators(@CurrentPrincipal() principal: Principal): Principal {
    return principal;
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('controller authentication and scopes', () => {
  let system: TestSystem;
  let operator: Record<string, string>;
  const url = (path: string) => `${system.controllerUrl}${path}`;

  const clientToken = async (scopes: string[]): Promise<Record<string, string>> => {
    const created = await http('POST', url('/api/v1/oauth/clients/'), { headers: operator, json: { name: 'probe', scopes } });
    const token = await http('POST', url('/api/v1/oauth/token/'), {
      json: { grant_type: 'client_credentials', client_id: created.body.client_id, client_secret: created.body.client_secret },
    });
    return { authorization: `Bearer ${token.body.access_token}` };
  };

  beforeAll(async () => {
    CONTROLLER_FEATURES.push(ProbeModule);
    system = await startTestSystem({ role: 'controller' });
    operator = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('accepts API_TOKEN as an operator with every scope', async () => {
    const answer = await http('GET', url('/api/v1/auth/whoami/'), { headers: operator });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ kind: 'operator', name: 'API_TOKEN' });
    // CONTRACT section 2's scopes and section 5's subscription scopes: an operator holds them all.
    expect([...answer.body.scopes].sort()).toEqual([
      'dispatchers:read', 'dispatchers:write', 'skills:read', 'skills:write', 'subscriptions:read', 'subscriptions:write',
      'tasks:read', 'tasks:write', 'webhooks:read', 'workflows:read', 'workflows:write',
    ]);
    expect((await http('GET', url('/api/v1/auth-probe/operators'), { headers: operator })).status).toBe(200);
    expect((await http('GET', url('/api/v1/auth-probe/skills-write/'), { headers: operator })).status).toBe(200);
  });

  it.each([
    ['no Authorization header', undefined],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
  ])('answers 401 not_authenticated with both challenges for %s', async (_name, authorization) => {
    const answer = await http('GET', url('/api/v1/auth-probe/skills-write/'), { headers: authorization ? { authorization } : {} });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ detail: 'Authentication credentials were not provided.', code: 'not_authenticated' });
    expect(answer.headers.get('www-authenticate')).toBe('Token realm="api", Bearer realm="api"');
  });

  it.each([
    ['a wrong operator token', 'Token wrong'],
    ['an empty operator token', 'Token'],
    ['a wrong bearer token', 'Bearer wrong'],
  ])('answers 401 authentication_failed for %s', async (_name, authorization) => {
    const answer = await http('GET', url('/api/v1/auth-probe/skills-write/'), { headers: { authorization } });
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('authentication_failed');
    expect(answer.headers.get('www-authenticate')).toMatch(/Bearer realm="api"/);
  });

  it('lets a client with the scope through and gives the endpoint its principal', async () => {
    const answer = await http('GET', url('/api/v1/auth-probe/skills-write/'), { headers: await clientToken(['skills:write']) });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ kind: 'client', name: 'probe', scopes: ['skills:write'] });
  });

  it('answers 403 permission_denied naming the scope to a client without it', async () => {
    const answer = await http('GET', url('/api/v1/auth-probe/skills-write/'), { headers: await clientToken(['skills:read', 'tasks:write']) });
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ code: 'permission_denied', detail: expect.stringContaining('skills:write') });
    expect(answer.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="skills:write"');
  });

  it('answers 403 to a client on an operator-only endpoint, whatever its scopes', async () => {
    const headers = await clientToken(['tasks:read', 'tasks:write', 'skills:read', 'skills:write', 'webhooks:read']);
    for (const path of ['/api/v1/auth-probe/operators', '/api/v1/oauth/clients/']) {
      const answer = await http('GET', url(path), { headers });
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ detail: 'This endpoint needs an operator token.', code: 'permission_denied' });
    }
  });

  it('shows any authenticated caller who it is at whoami', async () => {
    const answer = await http('GET', url('/api/v1/auth/whoami'), { headers: await clientToken(['webhooks:read']) });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ kind: 'client', scopes: ['webhooks:read'] });
  });

  it('documents the operator, OAuth and callback schemes in the OpenAPI document', async () => {
    const document = (await http('GET', url('/api/docs/openapi.json'))).body;
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['bearer', 'callback_token', 'client_basic', 'token']);
    expect(document.paths['/api/v1/auth/whoami'].get.security).toEqual(expect.arrayContaining([{ token: [] }, { bearer: [] }]));
  });
});
