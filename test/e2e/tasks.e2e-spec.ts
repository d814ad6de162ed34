import { randomUUID } from 'node:crypto';
import { TasksService, TaskTemplateInput } from '../../src/controller/tasks/tasks.service';
import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { checkInDispatcher, clientBearer, createTask, getTask, makeTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { randomPackage, sha256, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

describe('controller tasks API', () => {
  let system: TestSystem;
  const url = (path = '') => `${system.controllerUrl}/api/v1/tasks/${path}`;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', storage: 's3' });
  });
  afterAll(() => system?.close());

  it('keeps an inline brief with the pending task, and writes it to briefs/<guid>.json before a dispatcher is offered the task', async () => {
    const created = await createTask(system, { brief: { prompt: 'summarise', files: ['a.md'] }, runtime_target: { type: 'briefs-suite', namespace: '' } });
    expect(created.status).toBe(201);
    const guid = created.body.guid;
    expect(created.body).toMatchObject({ status: 'pending', brief_key: `briefs/${guid}.json`, created_by: 'operator:API_TOKEN' });
    const { updated_at: _changed, last_dispatch_error: _reason, waiting_reason: _shown, ...stable } = created.body;
    // No dispatcher is online: the task waits with the reason, and nothing is written yet.
    const waiting = await waitFor(async () => {
      const task = (await getTask(system, guid)).body;
      return task.last_dispatch_error ? task : null;
    }, 10_000, 'the reason the task waits');
    expect(waiting).toMatchObject({ ...stable, last_dispatch_error: 'No dispatcher is online; the task waits for one.', waiting_reason: 'No dispatcher is online; the task waits for one.' });
    const storage = createObjectStorage(system.config);
    expect(await storage.exists(`briefs/${guid}.json`)).toBe(false);

    const dispatcher = await new RecordingDispatcher().start();
    try {
      await checkInDispatcher(system, { name: 'briefs-suite', endpoint_url: dispatcher.url, backends: ['briefs-suite'] });
      await waitFor(() => dispatcher.taskRequests.find((request) => request.body.task_id === guid), 20_000, 'the task request');
      const stored = (await storage.get(`briefs/${guid}.json`))!;
      expect(JSON.parse((await readAll(stored)).toString('utf8'))).toEqual({ prompt: 'summarise', files: ['a.md'] });
      expect(dispatcher.taskRequests.find((request) => request.body.task_id === guid)!.body.brief_key).toBe(`briefs/${guid}.json`);
    } finally {
      await dispatcher.stop();
    }
  });

  it('pins each skill to a version at creation: "slug" the latest, "slug@N" that one', async () => {
    const skills = skillsApi(system);
    const slug = await skills.makeSkill();
    const [v1, v2] = [randomPackage(), randomPackage()];
    await skills.upload(slug, v1);
    await skills.upload(slug, v2);
    const created = await createTask(system, { skills: [slug, `${slug}@1`] });
    expect(created.status).toBe(201);
    expect(created.body.skills).toEqual([
      { slug, version_number: 2, content_hash: sha256(v2), storage_ref: `skills/sha256/${sha256(v2)}.zip` },
      { slug, version_number: 1, content_hash: sha256(v1), storage_ref: `skills/sha256/${sha256(v1)}.zip` },
    ]);
    await skills.upload(slug, randomPackage());
    expect((await getTask(system, created.body.guid)).body.skills[0].version_number).toBe(2);

    for (const reference of ['no-such-skill', `${slug}@9`]) {
      const refused = await createTask(system, { skills: [reference] });
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toHaveProperty('skills');
    }
  });

  it('takes an existing brief_key instead, and refuses one that does not exist', async () => {
    const key = `briefs/shared-${randomUUID()}.json`;
    await createObjectStorage(system.config).put(key, Buffer.from('{"prompt":"shared"}'), { contentType: 'application/json' });
    const reused = await createTask(system, { brief: undefined, brief_key: key });
    expect(reused.status).toBe(201);
    expect(reused.body.brief_key).toBe(key);
    const missing = await createTask(system, { brief: undefined, brief_key: 'briefs/none.json' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toHaveProperty('brief_key');
  });

  it.each([
    [{ agent_image: undefined }, 'agent_image'],
    [{ runtime_target: { namespace: 'x' } }, 'runtime_target.type'],
    [{ resources: { cpu: 'lots', memory: '1Gi' } }, 'resources.cpu'],
    [{ resources: { cpu: '1', memory: '1 gigabyte' } }, 'resources.memory'],
    [{ env: { A: 1 } }, 'env'],
    [{ ports: [{ container_port: 70000 }] }, 'ports.0.container_port'],
    [{ skills: ['Bad Slug'] }, 'skills'],
    [{ timeout_seconds: 0 }, 'timeout_seconds'],
    [{ timeout_seconds: 86401 }, 'timeout_seconds'],
    [{ brief: undefined }, 'brief'],
    [{ brief_key: 'briefs/x.json' }, 'brief'],
    [{ dispatcher_labels: ['a'] }, 'dispatcher_labels'],
  ])('answers 400 naming the field for %j', async (change, field) => {
    const answer = await http('POST', url(), { headers: operator(system), json: { ...makeTask(), ...change } });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it('lists newest first with count, next and previous, filtered by status and workflow', async () => {
    const tasks = system.controller!.get(TasksService);
    const origin = { workflowId: 'nightly-review', deliveryId: 'delivery-1' };
    const fromWorkflow = [await tasks.createTask(makeTask() as unknown as TaskTemplateInput, origin), await tasks.createTask(makeTask() as unknown as TaskTemplateInput, origin)];

    const page = await http('GET', url('?workflow=nightly-review&limit=1'), { headers: operator(system) });
    expect(page.status).toBe(200);
    expect(page.body.count).toBe(2);
    expect(page.body.results.map((t: { guid: string }) => t.guid)).toEqual([fromWorkflow[1].guid]);
    expect(page.body.results[0]).toMatchObject({ workflow: 'nightly-review', delivery_id: 'delivery-1' });
    expect(page.body.count_estimated).toBe(false);
    expect(page.body.previous).toBeNull();
    expect(page.body.next).toMatch(new RegExp(`^${system.controllerUrl}/api/v1/tasks/\\?workflow=nightly-review&limit=1&cursor=[A-Za-z0-9_-]+$`));
    const second = await http('GET', page.body.next, { headers: operator(system) });
    expect(second.body.results.map((t: { guid: string }) => t.guid)).toEqual([fromWorkflow[0].guid]);
    expect(second.body.next).toBeNull();
    const back = await http('GET', second.body.previous, { headers: operator(system) });
    expect(back.body).toMatchObject({ count: 2, previous: null, results: [{ guid: fromWorkflow[1].guid }] });
    const byOffset = await http('GET', url('?workflow=nightly-review&limit=1&offset=1'), { headers: operator(system) });
    expect(byOffset.body.results.map((t: { guid: string }) => t.guid)).toEqual([fromWorkflow[0].guid]);
    expect((await http('GET', byOffset.body.previous, { headers: operator(system) })).body.results[0].guid).toBe(fromWorkflow[1].guid);
    const exact = await http('GET', url('?workflow=nightly-review&limit=1&count=exact'), { headers: operator(system) });
    expect(exact.body).toMatchObject({ count: 2, count_estimated: false });
    expect(exact.body.next).toContain('count=exact');
    const forged = await http('GET', url('?cursor=bm90LWEtY3Vyc29y'), { headers: operator(system) });
    expect(forged.status).toBe(400);
    expect(forged.body.errors.cursor[0]).toContain('not a cursor');
    expect((await http('GET', url('?count=all'), { headers: operator(system) })).status).toBe(400);

    const done = await http('GET', url('?status=completed'), { headers: operator(system) });
    expect(done.body).toMatchObject({ count: 0, results: [] });
    expect((await http('GET', url('?limit=501'), { headers: operator(system) })).status).toBe(400);
    expect((await http('GET', url('?status=sleeping'), { headers: operator(system) })).status).toBe(400);
    const all = await http('GET', url(), { headers: operator(system) });
    expect(all.body.count).toBeGreaterThanOrEqual(5);
  });

  it('answers 404 for an unknown or malformed task id', async () => {
    expect((await getTask(system, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await getTask(system, 'not-a-uuid')).status).toBe(404);
  });

  it('needs tasks:write to create and tasks:read to read', async () => {
    expect((await http('POST', url(), { json: makeTask() })).status).toBe(401);
    const reader = await clientBearer(system, ['tasks:read']);
    const refused = await http('POST', url(), { headers: reader, json: makeTask() });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('permission_denied');
    expect((await http('GET', url(), { headers: reader })).status).toBe(200);

    const writer = await clientBearer(system, ['tasks:write']);
    const created = await http('POST', url(), { headers: writer, json: makeTask() });
    expect(created.status).toBe(201);
    expect(created.body.created_by).toMatch(/^client:/);
    expect((await http('GET', url(created.body.guid), { headers: writer })).status).toBe(403);
    expect((await http('POST', url(`${created.body.guid}/cancel/`), { headers: reader })).status).toBe(403);
  });
});
