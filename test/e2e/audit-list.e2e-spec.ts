import { clientBearer, createTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

type Json = any;

const TASK = { agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 60, brief: { prompt: 'audit' } };

/**
 * GET /api/v1/audit/: operators only, newest first, each filter alone and together, cursor
 * pages that keep the filters, and the caller's address through TRUST_PROXY.
 */
describe('audit trail list', () => {
  let system: TestSystem;
  let client: Record<string, string>;
  let clientId: string;
  let since: string;
  const tasks: string[] = [];
  const skills: string[] = [];

  const audit = (query = '', headers: Record<string, string> = operator(system)) => http('GET', `${system.controllerUrl}/api/v1/audit/${query}`, { headers });
  const all = async (url: string): Promise<Json[]> => {
    const rows: Json[] = [];
    for (let next: string | null = url; next; ) {
      const page: Json = await http('GET', next, { headers: operator(system) });
      expect(page.status).toBe(200);
      rows.push(...page.body.results);
      next = page.body.next;
    }
    return rows;
  };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TRUST_PROXY: 'loopback' } });
    client = await clientBearer(system, ['tasks:write', 'tasks:read']);
    clientId = (await http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: client })).body.id;
    for (let i = 0; i < 3; i += 1) {
      const created = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: { ...client, 'x-forwarded-for': '203.0.113.7' }, json: TASK });
      expect(created.status).toBe(201);
      tasks.push(created.body.guid);
    }
    since = new Date().toISOString();
    for (let i = 0; i < 2; i += 1) {
      const created = await http('POST', `${system.controllerUrl}/api/v1/skills/`, { headers: operator(system), json: { name: `Audit list ${i} ${Date.now()}`, category: 'tool' } });
      expect(created.status).toBe(201);
      skills.push(created.body.slug);
    }
    expect((await createTask(system, { agent_image: '' })).status).toBe(400);
  });
  afterAll(async () => {
    await system?.close();
  });

  it('lists every row newest first, in the contract shape', async () => {
    const page = await audit();
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ count: 7, count_estimated: false, next: null, previous: null });
    expect(page.body.results.map((row: Json) => row.action)).toEqual([
      'tasks.create', 'skills.create', 'skills.create', 'tasks.create', 'tasks.create', 'tasks.create', 'oauth.createClient',
    ]);
    const [refusal] = page.body.results;
    expect(refusal).toEqual({
      id: expect.any(String), at: expect.any(String), actor: { kind: 'operator', name: expect.any(String) }, action: 'tasks.create', resource_type: 'task',
      resource_id: null, outcome: 'refused', remote_addr: '127.0.0.1', details: { status_code: 400, error: 'invalid', fields: expect.arrayContaining(['agent_image', 'brief']) },
    });
  });

  it('filters by actor, action, resource and time, alone and together', async () => {
    const byClient = (await audit(`?actor=${clientId}`)).body.results;
    expect(byClient.map((row: Json) => [row.actor.kind, row.resource_id, row.remote_addr])).toEqual(
      [...tasks].reverse().map((guid) => ['oauth_client', guid, '203.0.113.7']),
    );
    expect((await audit('?action=skills.create')).body.results.map((row: Json) => row.resource_id)).toEqual([...skills].reverse());
    expect((await audit(`?resource_type=task&resource_id=${tasks[1]}`)).body.results).toHaveLength(1);
    expect((await audit(`?resource_type=skill&actor=${clientId}`)).body.results).toEqual([]);
    expect((await audit(`?since=${encodeURIComponent(since)}`)).body.results.map((row: Json) => row.action)).toEqual(['tasks.create', 'skills.create', 'skills.create']);
  });

  it('pages by cursor both ways, keeping the filters', async () => {
    const everything = (await audit('?limit=500')).body.results.map((row: Json) => row.id);
    const paged = await all(`${system.controllerUrl}/api/v1/audit/?limit=2`);
    expect(paged.map((row) => row.id)).toEqual(everything);
    const first = (await audit(`?actor=${clientId}&limit=2`)).body;
    expect(first.next).toContain(`actor=${clientId}`);
    const second: Json = (await http('GET', first.next, { headers: operator(system) })).body;
    expect(second.results.map((row: Json) => row.resource_id)).toEqual([tasks[0]]);
    expect(second.next).toBeNull();
    const back: Json = (await http('GET', second.previous, { headers: operator(system) })).body;
    expect(back.results.map((row: Json) => row.id)).toEqual(first.results.map((row: Json) => row.id));
  });

  it('answers operators only, and names a bad filter', async () => {
    expect((await audit('', client)).status).toBe(403);
    expect((await audit('', {})).status).toBe(401);
    const badSince = await audit('?since=last-week');
    expect([badSince.status, badSince.body.errors]).toEqual([400, { since: [expect.stringContaining('ISO 8601')] }]);
    expect((await audit('?cursor=not-a-cursor')).status).toBe(400);
    expect((await audit('?limit=501')).status).toBe(400);
  });
});
