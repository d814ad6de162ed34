import { getTask, makeTask } from '../harness/controller-tasks';
import { makeTaskRequest, taskApi } from '../harness/dispatcher';
import { http } from '../harness/http';
import { freePort } from '../harness/ports';
import { randomPackage, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

/** A loopback address nothing listens on: every connection to it is refused at once. */
const nowhere = async (scheme: string) => `${scheme}://127.0.0.1:${await freePort()}`;

describe('a cache that is down', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { REDIS_URL: await nowhere('redis'), AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: 'true' } });
  });
  afterAll(() => system?.close());

  it('counts failed authentications in this process meanwhile', async () => {
    const url = `${system.controllerUrl}/api/v1/dispatchers/`;
    const from = { 'x-forwarded-for': '10.9.0.1' };
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await http('GET', url, { headers: { ...from, authorization: 'Token wrong' } })).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('leaves authentication working and says so on /ready/', async () => {
    const url = `${system.controllerUrl}/api/v1/dispatchers/`;
    expect((await http('GET', url, { headers: { authorization: `Token ${system.apiToken}` } })).status).toBe(200);
    const refused = await http('GET', url, { headers: { authorization: 'Token not-the-token' } });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('authentication_failed');

    const client = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, {
      headers: { authorization: `Token ${system.apiToken}` }, json: { name: 'outage', scopes: ['dispatchers:read'] },
    });
    const token = await http('POST', `${system.controllerUrl}/api/v1/oauth/token/`, {
      json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
    });
    expect(token.status).toBe(200);
    expect((await http('GET', url, { headers: { authorization: `Bearer ${token.body.access_token}` } })).status).toBe(200);

    const ready = await http('GET', `${system.controllerUrl}/ready/`);
    expect(ready.status).toBe(503);
    expect(ready.body.error).toHaveProperty('cache');
  });
});

describe('object storage that is down', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', storage: 's3', env: { S3_ENDPOINT: await nowhere('http') } });
  });
  afterAll(() => system?.close());

  const operator = () => ({ authorization: `Token ${system.apiToken}` });

  it('answers 503 unavailable with Retry-After where a request needs it, and still stores tasks with inline briefs', async () => {
    const named = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(), json: makeTask({ brief: undefined, brief_key: 'briefs/elsewhere.json' }) });
    expect(named.status).toBe(503);
    expect(named.body).toMatchObject({ code: 'unavailable', detail: expect.stringContaining('not reachable') });
    expect(named.headers.get('retry-after')).toBe('5');

    // The brief waits in the database until the store is back: the task is taken.
    const inline = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(), json: makeTask() });
    expect(inline.status).toBe(201);

    const skills = skillsApi(system);
    const slug = await skills.makeSkill();
    const upload = await skills.upload(slug, randomPackage());
    expect(upload.status).toBe(503);
    expect(upload.body.code).toBe('unavailable');
    expect((await http('GET', `${system.controllerUrl}/api/v1/skills/${slug}/`, { headers: operator() })).body.versions).toEqual([]);
  });

  it('keeps a task whose brief cannot be written pending with the reason, never sending it to the dispatcher online', async () => {
    const inline = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(), json: makeTask() });
    expect(inline.status).toBe(201);
    const guid = inline.body.guid as string;
    const reason = await waitFor(async () => (await getTask(system, guid)).body.last_dispatch_error as string | null, 15_000, 'a dispatch round');
    expect(reason).toContain('The brief could not be written to object storage');
    expect((await getTask(system, guid)).body.status).toBe('pending');
    expect((await taskApi(system).get(guid)).status).toBe(404);
  });

  it('answers an agent writing its result 503 in the dispatcher envelope', async () => {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '30' } });
    expect((await taskApi(system).create(request)).status).toBe(201);
    const answer = await http('PUT', `${system.dispatcherUrl}/agent/objects/results/${request.task_id}/out.txt`, {
      headers: { 'x-agent-key': system.agentKey, 'content-type': 'text/plain' }, body: 'result',
    });
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    await taskApi(system).cancel(request.task_id);
  });
});
