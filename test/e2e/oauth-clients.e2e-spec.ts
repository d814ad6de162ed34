import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('OAuth client management (operators only)', () => {
  let system: TestSystem;
  let operator: Record<string, string>;
  const clients = (path = '') => `${system.controllerUrl}/api/v1/oauth/clients/${path}`;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    operator = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('creates a client and shows its secret this once', async () => {
    const created = await http('POST', clients(), { headers: operator, json: { name: 'ci', scopes: ['tasks:read', 'tasks:write'], extra: 1 } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      client_id: expect.stringMatching(UUID),
      client_secret: expect.stringMatching(/^atc_cs_[A-Za-z0-9_-]{43}$/),
      name: 'ci',
      scopes: ['tasks:read', 'tasks:write'],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });

    const list = await http('GET', clients(), { headers: operator });
    expect(list.status).toBe(200);
    const listed = list.body.results.find((item: { client_id: string }) => item.client_id === created.body.client_id);
    expect(listed).toEqual({ client_id: created.body.client_id, name: 'ci', scopes: ['tasks:read', 'tasks:write'], created_at: created.body.created_at });
    expect(list.text).not.toContain(created.body.client_secret);
    expect(list.body.count).toBe(list.body.results.length);
  });

  it('refuses unknown scopes with 400 naming them and the allowed ones', async () => {
    const answer = await http('POST', clients(), { headers: operator, json: { name: 'x', scopes: ['tasks:read', 'tasks:admin'] } });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(answer.body.errors.scopes[0]).toContain('tasks:admin');
    expect(answer.body.errors.scopes[0]).toContain('dispatchers:write');
  });

  it.each([
    ['a missing name', { scopes: ['tasks:read'] }, 'name'],
    ['an empty name', { name: '', scopes: ['tasks:read'] }, 'name'],
    ['scopes that are not a list', { name: 'x', scopes: 'tasks:read' }, 'scopes'],
    ['an empty scope list', { name: 'x', scopes: [] }, 'scopes'],
  ])('refuses %s with 400 naming the field', async (_name, body, field) => {
    const answer = await http('POST', clients(), { headers: operator, json: body });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it('deletes a client with 204, then 404; an id that is no UUID is 404', async () => {
    const created = await http('POST', clients(), { headers: operator, json: { name: 'gone', scopes: ['skills:read'] } });
    expect((await http('DELETE', clients(`${created.body.client_id}/`), { headers: operator })).status).toBe(204);
    const again = await http('DELETE', clients(created.body.client_id), { headers: operator });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('not_found');
    expect((await http('DELETE', clients('not-a-uuid/'), { headers: operator })).status).toBe(404);
  });

  it.each([
    ['POST', ''],
    ['GET', ''],
    ['DELETE', '00000000-0000-4000-8000-000000000000/'],
  ])('%s answers 401 without credentials', async (method, path) => {
    const answer = await http(method, clients(path), method === 'POST' ? { json: { name: 'x', scopes: ['tasks:read'] } } : {});
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('not_authenticated');
    expect(answer.headers.get('www-authenticate')).toBeTruthy();
  });

  it('answers 403 to an OAuth client trying to manage clients', async () => {
    const created = await http('POST', clients(), { headers: operator, json: { name: 'curious', scopes: ['tasks:read'] } });
    const token = await http('POST', `${system.controllerUrl}/api/v1/oauth/token/`, {
      json: { grant_type: 'client_credentials', client_id: created.body.client_id, client_secret: created.body.client_secret },
    });
    const bearer = { authorization: `Bearer ${token.body.access_token}` };
    expect((await http('POST', clients(), { headers: bearer, json: { name: 'x', scopes: ['tasks:read'] } })).status).toBe(403);
    expect((await http('DELETE', clients(`${created.body.client_id}/`), { headers: bearer })).status).toBe(403);
  });
});
