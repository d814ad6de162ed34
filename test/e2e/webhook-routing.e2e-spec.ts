import { randomUUID } from 'node:crypto';
import { createServer, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { startTestSystem, TestSystem, testEnv } from '../harness/system';
import { waitFor } from '../harness/wait';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from '../harness/webhooks';

describe('webhook routing, duplicates, failures and the delivery ledger', () => {
  let system: TestSystem;
  let auth: Record<string, string>;
  const api = (path: string) => `${system.controllerUrl}/api/v1/${path}`;
  const push = async (repository: string, options: { deliveryId?: string; event?: string; ref?: string } = {}) =>
    sendWebhook(system.controllerUrl, await signedWebhook('forge', pushPayload(repository, options.ref), options));
  const createWorkflow = async (body: Record<string, unknown>) =>
    expect((await http('POST', api('workflows/'), { json: body, headers: auth })).status).toBe(201);
  const ledger = async (query: string) => (await http('GET', api(`webhooks/deliveries/?${query}`), { headers: auth })).body;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    auth = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('routes to the first enabled workflow by priority whose filters all match, else ignores', async () => {
    await createWorkflow(makeWorkflow('catch-all', { priority: 50 }, { filter: { 'repository.full_name': 'route/*' } }));
    await createWorkflow(makeWorkflow('main-only', { priority: 10 }, { filter: { 'repository.full_name': 'route/app', ref: 'refs/heads/main' } }));
    await createWorkflow(makeWorkflow('switched-off', { priority: 1, enabled: false }, { filter: { 'repository.full_name': 'route/*' } }));

    expect((await push('route/app')).body).toMatchObject({ status: 'ok', routed_to: 'main-only' });
    expect((await push('route/app', { ref: 'refs/heads/dev' })).body).toMatchObject({ status: 'ok', routed_to: 'catch-all' });
    const ignored = await push('elsewhere/app');
    expect(ignored.status).toBe(202);
    expect(ignored.body).toEqual({ status: 'ignored', routed_to: null });
    expect((await push('route/app', { event: 'issues' })).status).toBe(202);
  });

  it('answers a routed delivery once its task is stored, while a dispatcher that never answers holds the request', async () => {
    const held: ServerResponse[] = [];
    const silent = createServer((_request, response) => held.push(response));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      await http('POST', api('dispatchers/checkin/'), {
        headers: auth, json: { name: 'silent', endpoint_url: endpoint, backends: ['silent-runtime'], heartbeat_interval_seconds: 30 },
      });
      const workflow = makeWorkflow('to-silent', {}, { filter: { 'repository.full_name': 'silent/app' } });
      (workflow.task_template as Record<string, unknown>).runtime_target = { type: 'silent-runtime', namespace: '' };
      await createWorkflow(workflow);

      const answer = await push('silent/app');
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'ok', routed_to: 'to-silent' });
      const task = await http('GET', api(`tasks/${answer.body.task_guid}/`), { headers: auth });
      expect(task.body).toMatchObject({ status: 'pending', workflow: 'to-silent' });
      // The dispatch loop has sent the request by now or soon; it is still unanswered.
      await waitFor(() => held.length > 0, 10_000, 'the task request to reach the silent dispatcher');
      expect(held.every((response) => !response.writableEnded)).toBe(true);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('creates exactly one task for ten concurrent copies of one delivery', async () => {
    await createWorkflow(makeWorkflow('dedup', {}, { filter: { 'repository.full_name': 'dedup/app' } }));
    const copy = await signedWebhook('forge', pushPayload('dedup/app'), { deliveryId: randomUUID() });
    const answers = await Promise.all(Array.from({ length: 10 }, () => sendWebhook(system.controllerUrl, copy)));

    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => a.body.status === 'ok')).toHaveLength(1);
    expect(answers.filter((a) => a.body.status === 'duplicate').map((a) => a.body)).toEqual(Array(9).fill({ status: 'duplicate', routed_to: 'dedup' }));
    const runs = await http('GET', api('workflows/dedup/runs/'), { headers: auth });
    expect(runs.body.count).toBe(1);
    expect((await sendWebhook(system.controllerUrl, copy)).body.status).toBe('duplicate');
    expect((await ledger('workflow=dedup&outcome=routed')).count).toBe(1);
    expect((await ledger('workflow=dedup&outcome=duplicate')).count).toBe(10);
  });

  it('stores a burst of deliveries to two workflows whose tasks differ in shape, with copies among them: one task per delivery, each linked to its own', async () => {
    await createWorkflow(makeWorkflow('burst-plain', {}, { filter: { 'repository.full_name': 'burst/plain' } }));
    // A concurrency strategy other than queue holds its tasks at first: a task row of another shape.
    await createWorkflow(makeWorkflow('burst-held', { concurrency: { key: 'burst', limit: 500, strategy: 'cancel_newest' } }, { filter: { 'repository.full_name': 'burst/held' } }));
    const deliveries = await Promise.all(Array.from({ length: 120 }, (_, i) =>
      signedWebhook('forge', pushPayload(i % 2 === 0 ? 'burst/plain' : 'burst/held'), { deliveryId: `burst-${i}` })));
    // Every tenth delivery is sent three times at once.
    const sent = deliveries.flatMap((delivery, i) => (i % 10 === 0 ? [delivery, delivery, delivery] : [delivery]));
    const answers = await Promise.all(sent.map((delivery) => sendWebhook(system.controllerUrl, delivery)));
    expect(answers.map((answer) => answer.status)).toEqual(sent.map(() => 200));
    const routed = answers.filter((answer) => answer.body.status === 'ok');
    expect(routed).toHaveLength(120);
    expect(answers.filter((answer) => answer.body.status === 'duplicate')).toHaveLength(24);
    expect(new Set(routed.map((answer) => answer.body.task_guid)).size).toBe(120);

    // Each task names the workflow it was routed to and points at its own delivery, which points back.
    for (const workflow of ['burst-plain', 'burst-held']) {
      expect((await http('GET', api(`workflows/${workflow}/runs/?limit=100`), { headers: auth })).body.count).toBe(60);
      expect((await ledger(`workflow=${workflow}&outcome=routed`)).count).toBe(60);
    }
    const sample = routed.filter((_, i) => i % 7 === 0);
    for (const answer of sample) {
      const task = (await http('GET', api(`tasks/${answer.body.task_guid}/`), { headers: auth })).body;
      expect(task.workflow).toBe(answer.body.routed_to);
      const delivery = (await http('GET', api(`webhooks/deliveries/${task.delivery_id}/`), { headers: auth })).body;
      expect(delivery).toMatchObject({ outcome: 'routed', task_guid: answer.body.task_guid, routed_to: answer.body.routed_to });
    }
  });

  it('keeps one task per delivery across two controller processes that share no cache, through the ledger index', async () => {
    await createWorkflow(makeWorkflow('replicas', {}, { filter: { 'repository.full_name': 'replicas/app' } }));
    const env = await testEnv({ role: 'controller', databaseUrl: system.config.databaseUrl!, redis: false });
    const replicaUrl = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
    const replica = await new RoleProcess(env, `${replicaUrl}/health/`).start();
    try {
      const copy = await signedWebhook('forge', pushPayload('replicas/app'), { deliveryId: randomUUID() });
      const targets = Array.from({ length: 10 }, (_, i) => (i % 2 ? replicaUrl : system.controllerUrl));
      const answers = await Promise.all(targets.map((url) => sendWebhook(url, copy)));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      expect(answers.filter((a) => a.body.status === 'ok')).toHaveLength(1);
      expect(answers.filter((a) => a.body.status === 'duplicate')).toHaveLength(9);
      expect((await http('GET', api('workflows/replicas/runs/'), { headers: auth })).body.count).toBe(1);
    } finally {
      await replica.stop();
    }
  });

  it('routes on another replica a workflow created here, within a second or two', async () => {
    const replica = await startTestSystem({ role: 'controller', databaseUrl: system.config.databaseUrl!, redis: false });
    try {
      const send = async () => sendWebhook(replica.controllerUrl, await signedWebhook('forge', pushPayload('spread/app'), { deliveryId: randomUUID() }));
      expect((await send()).status).toBe(202);
      await createWorkflow(makeWorkflow('spread', {}, { filter: { 'repository.full_name': 'spread/app' } }));
      const started = Date.now();
      await waitFor(async () => (await send()).body.routed_to === 'spread', 2500, 'the replica to route to the new workflow');
      expect(Date.now() - started).toBeLessThan(2500);
    } finally {
      await replica.close();
    }
  });

  it('answers 5xx when the task cannot be stored, keeps the reason, and routes the retry', async () => {
    await createWorkflow(makeWorkflow('fragile', {}, { filter: { 'repository.full_name': 'fragile/app' } }));
    const delivery = await signedWebhook('forge', pushPayload('fragile/app'), { deliveryId: randomUUID() });
    const database = system.controller!.get(DataSource);
    await database.query('ALTER TABLE "controller"."tasks" RENAME TO "tasks_away"');
    let failed;
    try {
      failed = await sendWebhook(system.controllerUrl, delivery);
    } finally {
      await database.query('ALTER TABLE "controller"."tasks_away" RENAME TO "tasks"');
    }
    expect(failed.status).toBe(503);
    expect(failed.body.detail).toContain('fragile');
    const kept = await ledger('workflow=fragile&outcome=failed');
    expect(kept.results[0]).toMatchObject({ outcome: 'failed', status_code: 503, task_guid: null, error: expect.stringContaining('task creation failed') });

    const retry = await sendWebhook(system.controllerUrl, delivery);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ status: 'ok', routed_to: 'fragile' });
  });

  it('lists the ledger newest first with filters and paging, the payload on the detail', async () => {
    await createWorkflow(makeWorkflow('paged', {}, { filter: { 'repository.full_name': 'paged/app' } }));
    for (let i = 0; i < 3; i += 1) await push('paged/app');
    const page = await ledger('workflow=paged&limit=2');
    expect(page).toMatchObject({ count: 3, previous: null });
    expect(page.results).toHaveLength(2);
    expect(page.results[0]).toMatchObject({ source: 'forge', event: 'push', verified: false, outcome: 'routed', routed_to: 'paged' });
    expect(page.next).toContain('workflow=paged');
    const next = await http('GET', page.next.replace(system.config.publicUrl, system.controllerUrl), { headers: auth });
    expect(next.body).toMatchObject({ count: 3, next: null, results: [expect.any(Object)] });

    const detail = await http('GET', api(`webhooks/deliveries/${page.results[0].id}/`), { headers: auth });
    expect(detail.body.payload).toMatchObject({ repository: { full_name: 'paged/app' } });
    expect((await ledger('source=chat')).count).toBe(0);
    expect((await http('GET', api('webhooks/deliveries/?outcome=sideways'), { headers: auth })).status).toBe(400);
    expect((await http('GET', api('webhooks/deliveries/'))).status).toBe(401);
  });

  it('replays a kept delivery as a new task linked to the first delivery', async () => {
    await createWorkflow(makeWorkflow('replayed', {}, { filter: { 'repository.full_name': 'replay/app' } }));
    const first = await push('replay/app');
    const [original] = (await ledger('workflow=replayed')).results;

    const replay = await http('POST', api(`webhooks/deliveries/${original.id}/replay/`), { headers: auth });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ status: 'ok', routed_to: 'replayed', delivery: expect.any(String) });
    expect(replay.body.task_guid).not.toBe(first.body.task_guid);
    const task = await http('GET', api(`tasks/${replay.body.task_guid}/`), { headers: auth });
    expect(task.body).toMatchObject({ workflow: 'replayed', delivery_id: original.id });
    const copy = await http('GET', api(`webhooks/deliveries/${replay.body.delivery}/`), { headers: auth });
    expect(copy.body).toMatchObject({ replay_of: original.id, outcome: 'routed', task_guid: replay.body.task_guid });

    expect((await http('POST', api(`webhooks/deliveries/${original.id}/replay/`))).status).toBe(401);
    expect((await http('POST', api(`webhooks/deliveries/${randomUUID()}/replay/`), { headers: auth })).status).toBe(404);
  });
});
