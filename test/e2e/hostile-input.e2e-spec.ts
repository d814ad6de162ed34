import { randomUUID } from 'node:crypto';
import { makeTask } from '../harness/controller-tasks';
import { makeTaskRequest } from '../harness/dispatcher';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow } from '../harness/webhooks';

type Role = 'controller' | 'dispatcher';

interface Endpoint {
  role: Role;
  path: string;
  body: () => Record<string, unknown>;
  headers: (system: TestSystem) => Record<string, string>;
}

const operator = (system: TestSystem) => ({ authorization: `Token ${system.apiToken}` });
const apiKey = (system: TestSystem) => ({ 'x-api-key': system.apiKey });
const agentKey = (system: TestSystem) => ({ 'x-agent-key': system.agentKey });

/**
 * Named hostile cases on the main write endpoints, each asserted by name. The generated fuzz of
 * every write operation of both documents is test/e2e/openapi-fuzz.e2e-spec.ts.
 */
const ENDPOINTS: Endpoint[] = [
  { role: 'controller', path: '/api/v1/tasks/', headers: operator, body: () => makeTask({ brief: { prompt: 'hi', data: { n: 1 } } }) },
  { role: 'controller', path: '/api/v1/workflows/', headers: operator, body: () => makeWorkflow(`hostile-${randomUUID().slice(0, 8)}`) },
  { role: 'controller', path: '/api/v1/skills/', headers: operator, body: () => ({ name: `hostile ${randomUUID()}`, description: 'd', category: 'tool' }) },
  { role: 'controller', path: '/api/v1/dispatchers/checkin/', headers: operator, body: () => ({ name: `d-${randomUUID()}`, endpoint_url: 'http://127.0.0.1:9', backends: ['local'], labels: { zone: 'eu' } }) },
  { role: 'controller', path: '/api/v1/dispatchers/heartbeat/', headers: operator, body: () => ({ dispatcher_guid: randomUUID(), active_tasks: 1, capacity: 4 }) },
  { role: 'controller', path: '/api/v1/oauth/clients/', headers: operator, body: () => ({ name: `c-${randomUUID()}`, scopes: ['tasks:read'] }) },
  { role: 'dispatcher', path: '/tasks', headers: apiKey, body: () => makeTaskRequest({ env: { A: 'b' } }) },
  { role: 'dispatcher', path: '/agent/checkin', headers: agentKey, body: () => ({ task_id: randomUUID(), name: 'agent' }) },
  { role: 'dispatcher', path: '/agent/progress', headers: agentKey, body: () => ({ task_id: randomUUID(), percentage: 10, message: 'm', data: { k: 'v' } }) },
];

/** Every leaf of a body, as a path of keys. */
function leaves(value: unknown, path: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [path];
  return Object.entries(value).flatMap(([key, item]) => leaves(item, [...path, key]));
}

function withLeaf(body: Record<string, unknown>, path: string[], leaf: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  let node: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1]] = leaf;
  return copy;
}

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** The hostile variants of one valid body, each as raw JSON text with what it tries. */
function hostileBodies(body: Record<string, unknown>): [string, string][] {
  const cases: [string, string][] = [
    ['an array nested 3,000 deep', nested(3000)],
    ['a field nested 3,000 deep', JSON.stringify(body).replace(/}$/, `,"deep":${nested(3000)}}`)],
    ['a constructor key at the top', JSON.stringify({ ...body, constructor: { x: 1 } })],
    ['a __proto__ key inside', JSON.stringify(body).replace(/}$/, ',"data2":{"__proto__":{"x":1}}}')],
    ['a NUL in a key', JSON.stringify({ ...body, 'a\u0000b': 1 })],
  ];
  for (const path of leaves(body)) {
    const name = path.join('.');
    cases.push([`${name} with a NUL`, JSON.stringify(withLeaf(body, path, 'a\u0000b'))]);
    cases.push([`${name} as a lone surrogate`, JSON.stringify(withLeaf(body, path, 'x\ud800'))]);
    cases.push([`${name} as 1e308`, JSON.stringify(withLeaf(body, path, 1e308))]);
    // 2^53 + 1 has no exact double: it is written into the text, as a client in another language would send it.
    cases.push([`${name} as 2^53+1`, JSON.stringify(withLeaf(body, path, 0.123456789)).replace('0.123456789', '9007199254740993')]);
    cases.push([`${name} holding a constructor key`, JSON.stringify(withLeaf(body, path, { constructor: { x: 1 } }))]);
  }
  return cases;
}

describe('hostile JSON on every write endpoint of both roles', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all' });
  });
  afterAll(() => system?.close());

  it.each(ENDPOINTS.map((endpoint) => [`${endpoint.role} POST ${endpoint.path}`, endpoint] as const))('%s answers 4xx in its role\'s error shape, never 500', async (_name, endpoint) => {
    const base = endpoint.role === 'controller' ? system.controllerUrl : system.dispatcherUrl;
    const seen: string[] = [];
    for (const [what, raw] of hostileBodies(endpoint.body())) {
      const answer = await http('POST', `${base}${endpoint.path}`, { body: raw, headers: { ...endpoint.headers(system), 'content-type': 'application/json' } });
      if (answer.status >= 500) seen.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
      if (answer.status < 400) continue;
      const shape = endpoint.role === 'controller' ? { detail: expect.any(String), code: expect.any(String) } : { ok: false, error: { code: expect.any(String) } };
      expect(answer.body).toMatchObject(shape);
    }
    expect(seen).toEqual([]);
  });

  it('keeps free-form JSON whole, constructor and __proto__ keys included', async () => {
    const brief = JSON.parse('{"constructor":{"x":1},"__proto__":{"polluted":true},"nested":[{"prototype":"p","constructor":"c"}]}');
    const workflow = makeWorkflow(`keys-${randomUUID().slice(0, 8)}`);
    (workflow.task_template as Record<string, unknown>).brief = brief;
    const created = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { headers: operator(system), json: workflow });
    expect(created.status).toBe(201);
    const read = await http('GET', `${system.controllerUrl}/api/v1/workflows/${workflow.id}/`, { headers: operator(system) });
    const kept = read.body.task_template.brief as Record<string, unknown>;
    expect(Object.keys(kept).sort()).toEqual(['__proto__', 'constructor', 'nested']);
    expect(Object.getOwnPropertyDescriptor(kept, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.getOwnPropertyDescriptor(kept, 'constructor')?.value).toEqual({ x: 1 });
    expect(JSON.stringify(kept.nested)).toBe('[{"prototype":"p","constructor":"c"}]');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('names the field and the reason', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      headers: operator(system),
      json: makeTask({ brief: { notes: ['ok', 'bad\u0000byte'] } }),
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'invalid', errors: { 'brief.notes.1': ['contains a NUL character, which cannot be stored'] } });
    const deep = await http('POST', `${system.dispatcherUrl}/agent/progress`, { headers: { ...agentKey(system), 'content-type': 'application/json' }, body: `{"task_id":"${randomUUID()}","data":${nested(100)}}` });
    expect(deep.status).toBe(400);
    expect(deep.body.error).toMatchObject({ code: 'invalid', details: { fields: { 'data.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0': ['is nested deeper than 64 levels'] } } });
  });
});
