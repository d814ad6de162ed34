import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from '../harness/webhooks';

describe('workflows API', () => {
  let system: TestSystem;
  let auth: Record<string, string>;
  const url = (path = '') => `${system.controllerUrl}/api/v1/workflows/${path}`;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    auth = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('creates, reads, lists, replaces and deletes a workflow', async () => {
    const created = await http('POST', url(), { json: makeWorkflow('crud'), headers: auth });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'crud', enabled: true, priority: 100, task_template: { agent_image: 'agent-examples/echo' } });
    expect(created.body.triggers[0].filter).toEqual({ 'repository.full_name': 'acme/app' });

    expect((await http('GET', url('crud/'), { headers: auth })).body.name).toBe('Workflow crud');
    expect((await http('GET', `${system.controllerUrl}/api/v1/workflows/crud`, { headers: auth })).status).toBe(200);
    const list = await http('GET', url(), { headers: auth });
    expect(list.body).toMatchObject({ count: 1, next: null, previous: null, results: [{ id: 'crud' }] });

    const replaced = await http('PUT', url('crud/'), { json: { ...makeWorkflow('ignored'), enabled: false, priority: 5 }, headers: auth });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: 'crud', enabled: false, priority: 5 });

    expect((await http('DELETE', url('crud/'), { headers: auth })).status).toBe(204);
    expect((await http('GET', url('crud/'), { headers: auth })).status).toBe(404);
    expect((await http('DELETE', url('crud/'), { headers: auth })).status).toBe(404);
  });

  it("keeps a template's pod additions, which its tasks carry on", async () => {
    const workflow = makeWorkflow('shaped');
    const additions = { labels: { 'tasks.example.com/run': 'nightly' }, tolerations: [{ key: 'dedicated', operator: 'Exists' }], priority_class: 'batch-low' };
    workflow.task_template = { ...(workflow.task_template as object), ...additions };
    const created = await http('POST', url(), { json: workflow, headers: auth });
    expect(created.status).toBe(201);
    expect(created.body.task_template).toMatchObject(additions);
    expect((await http('GET', url('shaped/'), { headers: auth })).body.task_template).toMatchObject(additions);
    await http('DELETE', url('shaped/'), { headers: auth });
  });

  it('refuses a second workflow with the same id with 409', async () => {
    expect((await http('POST', url(), { json: makeWorkflow('twice'), headers: auth })).status).toBe(201);
    const again = await http('POST', url(), { json: makeWorkflow('twice'), headers: auth });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
  });

  it.each([
    ['id', { id: 'Not A Slug' }],
    ['triggers', { triggers: [] }],
    ['triggers.0.source', { triggers: [{ source: 'pager', event: 'push' }] }],
    ['triggers.0.event', { triggers: [{ source: 'forge', event: 'push event!' }] }],
    ['triggers.0.filter', { triggers: [{ source: 'forge', event: 'push', filter: { 'a..b': 'x' } }] }],
    ['triggers.0.filter', { triggers: [{ source: 'forge', event: 'push', filter: { ref: { nested: true } } }] }],
    ['task_template.agent_image', { task_template: { ...template(), agent_image: 'Bad Image!' } }],
    ['task_template.runtime_target.type', { task_template: { ...template(), runtime_target: { type: 'Main Frame!' } } }],
    ['task_template.resources.cpu', { task_template: { ...template(), resources: { cpu: 'lots', memory: '1Gi' } } }],
    ['task_template.resources.memory', { task_template: { ...template(), resources: { cpu: '1', memory: '1 GB' } } }],
    ['task_template.ports.0.container_port', { task_template: { ...template(), ports: [{ container_port: 70000, protocol: 'tcp' }] } }],
    ['task_template.ports.0.protocol', { task_template: { ...template(), ports: [{ container_port: 80, protocol: 'http' }] } }],
    ['task_template.timeout_seconds', { task_template: { ...template(), timeout_seconds: 0 } }],
    ['task_template.timeout_seconds', { task_template: { ...template(), timeout_seconds: 86401 } }],
    ['task_template.env', { task_template: { ...template(), env: { '1BAD': 'x' } } }],
    ['task_template.skills', { task_template: { ...template(), skills: ['Bad Skill'] } }],
    ['task_template.brief', { task_template: { ...template(), brief: { x: '{{secrets.token}}' } } }],
  ])('refuses an invalid %s with 400 naming the field', async (field, overrides) => {
    const answer = await http('POST', url(), { json: { ...makeWorkflow('invalid'), ...overrides }, headers: auth });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it('validates the replacement on PUT too', async () => {
    await http('POST', url(), { json: makeWorkflow('put-check'), headers: auth });
    const answer = await http('PUT', url('put-check/'), { json: { ...makeWorkflow('x'), task_template: { ...template(), timeout_seconds: -1 } }, headers: auth });
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toHaveProperty(['task_template.timeout_seconds']);
  });

  it('needs credentials with the workflows scopes', async () => {
    expect((await http('GET', url())).status).toBe(401);
    expect((await http('POST', url(), { json: makeWorkflow('anon') })).status).toBe(401);
    expect((await http('GET', url(), { headers: { authorization: 'Token wrong' } })).status).toBe(401);
  });

  it('lists the tasks a workflow created under runs, newest first', async () => {
    await http('POST', url(), { json: makeWorkflow('runs', {}, { filter: { 'repository.full_name': 'acme/runs' } }), headers: auth });
    const guids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const answer = await sendWebhook(system.controllerUrl, await signedWebhook('forge', pushPayload('acme/runs')));
      expect(answer.status).toBe(200);
      guids.push(answer.body.task_guid);
    }
    const runs = await http('GET', url('runs/runs/?limit=2'), { headers: auth });
    expect(runs.status).toBe(200);
    expect(runs.body.count).toBe(3);
    expect(runs.body.results.map((task: { guid: string }) => task.guid)).toEqual([guids[2], guids[1]]);
    expect(runs.body.results[0]).toMatchObject({ workflow: 'runs', status: 'pending', agent_image: 'agent-examples/echo' });
    expect(runs.body.next).toContain('/api/v1/workflows/runs/runs/?limit=2&cursor=');
    const older = await http('GET', runs.body.next.replace(system.config.publicUrl, system.controllerUrl), { headers: auth });
    expect(older.body).toMatchObject({ count: 3, next: null, results: [{ guid: guids[0] }] });
    expect((await http('GET', url('nothing/runs/'), { headers: auth })).status).toBe(404);
  });
});

function template(): Record<string, unknown> {
  return makeWorkflow('t').task_template as Record<string, unknown>;
}
