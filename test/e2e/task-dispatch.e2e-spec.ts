import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { checkInDispatcher, createDispatchedTask, createTask, getTask, operator, sendSigned } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

describe('dispatching controller tasks', () => {
  let system: TestSystem;
  const recorders: RecordingDispatcher[] = [];
  const recorder = async () => {
    const started = await new RecordingDispatcher().start();
    recorders.push(started);
    return started;
  };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
  });
  afterAll(async () => {
    await Promise.all(recorders.map((r) => r.stop()));
    await system?.close();
  });

  it('sends the seed task request and is closed by the signed callback', async () => {
    const dispatcher = await recorder();
    await checkInDispatcher(system, { name: 'exact', endpoint_url: dispatcher.url, labels: { suite: 'exact' }, api_key: 'exact-key' });
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'exact' } });
    expect(created.body).toMatchObject({ status: 'dispatched', dispatcher: 'exact' });
    const guid = created.body.guid;

    expect(dispatcher.requests).toHaveLength(1);
    const [sent] = dispatcher.requests;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/tasks');
    expect(sent.headers['x-api-key']).toBe('exact-key');
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.body).toEqual({
      task_id: guid,
      agent_image: 'agent-examples/echo',
      runtime_target: { type: 'local', namespace: '' },
      resources: { cpu: '500m', memory: '256Mi' },
      env: { GREETING: 'hello' },
      ports: [{ container_port: 8080, protocol: 'tcp' }],
      brief_key: `briefs/${guid}.json`,
      callback_url: `${system.controllerUrl}/api/v1/tasks/${guid}/callback/`,
      callback_token: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      timeout_seconds: 600,
    });

    const closed = await sendSigned(system, guid, 'callback', {
      status: 'completed', exit_code: 0, result_key: `results/${guid}/out.json`, result_metadata: { words: 2 }, error_message: '',
    }, { token: sent.body.callback_token });
    expect(closed.status).toBe(200);
    expect(closed.body).toEqual({ status: 'ok', task_guid: guid, task_status: 'completed' });

    const detail = await getTask(system, guid);
    expect(detail.body).toMatchObject({
      status: 'completed',
      result: { exit_code: 0, result_key: `results/${guid}/out.json`, result_metadata: { words: 2 }, error_message: '' },
    });
  });

  it("passes the task's pod additions on in the task request, and refuses malformed ones with 400 naming the field", async () => {
    const dispatcher = await recorder();
    await checkInDispatcher(system, { name: 'shaped', endpoint_url: dispatcher.url, labels: { suite: 'shaped' }, api_key: 'shaped-key' });
    const additions = {
      labels: { 'tasks.example.com/run': 'nightly' }, annotations: { 'tasks.example.com/ticket': 'OPS-1' },
      node_selector: { gpu: 'a100' }, tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }], priority_class: 'batch-low',
    };
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'shaped' }, ...additions });
    expect(created.body).toMatchObject(additions);
    expect(dispatcher.requests[0].body).toMatchObject(additions);

    const refused = await createTask(system, { tolerations: [{ key: 'dedicated', effect: 'Always' }], priority_class: 'Not A Name' });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors).sort()).toEqual(['priority_class', 'tolerations.0.effect']);
  });

  it('uses DISPATCHER_API_KEY for a dispatcher that sent no api_key', async () => {
    const dispatcher = await recorder();
    await checkInDispatcher(system, { name: 'keyless', endpoint_url: dispatcher.url, labels: { suite: 'keyless' } });
    await createDispatchedTask(system, { dispatcher_labels: { suite: 'keyless' } });
    expect(dispatcher.requests[0].headers['x-api-key']).toBe(system.config.dispatcherApiKey);
  });

  it('picks the dispatcher with the runtime, the labels and the fewest active tasks, or the one named', async () => {
    const [busy, idle, other] = [await recorder(), await recorder(), await recorder()];
    const busyCheckin = await checkInDispatcher(system, { name: 'busy', endpoint_url: busy.url, labels: { suite: 'pick' } });
    await checkInDispatcher(system, { name: 'idle', endpoint_url: idle.url, labels: { suite: 'pick' } });
    await checkInDispatcher(system, { name: 'k8s-only', endpoint_url: other.url, backends: ['kubernetes'], labels: { suite: 'pick' } });
    await http('POST', `${system.controllerUrl}/api/v1/dispatchers/heartbeat/`, {
      headers: operator(system), json: { dispatcher_guid: busyCheckin.body.dispatcher_guid, active_tasks: 5, capacity: 10 },
    });

    expect((await createDispatchedTask(system, { dispatcher_labels: { suite: 'pick' } })).body.dispatcher).toBe('idle');
    expect((await createDispatchedTask(system, { dispatcher_labels: { suite: 'pick' }, dispatcher: 'busy' })).body.dispatcher).toBe('busy');
    const kube = await createDispatchedTask(system, { dispatcher_labels: { suite: 'pick' }, runtime_target: { type: 'kubernetes', namespace: 'agents' } });
    expect(kube.body.dispatcher).toBe('k8s-only');
    expect(other.taskRequests[0].body.runtime_target).toEqual({ type: 'kubernetes', namespace: 'agents' });
  });

  it('sends a task of any runtime type to a dispatcher that offers it: the controller keeps no list', async () => {
    const nomad = await recorder();
    await checkInDispatcher(system, { name: 'nomad-pool', endpoint_url: nomad.url, backends: ['nomad'], labels: { suite: 'any-runtime' } });
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'any-runtime' }, runtime_target: { type: 'nomad', namespace: '' } });
    expect(created.body).toMatchObject({ status: 'dispatched', dispatcher: 'nomad-pool', runtime_target: { type: 'nomad', namespace: '' } });
    expect(nomad.taskRequests[0].body.runtime_target).toEqual({ type: 'nomad', namespace: '' });
  });

  it('keeps sending other tasks while a dispatcher holds a request unanswered', async () => {
    const open: { closed: boolean }[] = [];
    const silent = createServer((request) => {
      const held = { closed: false };
      open.push(held);
      request.socket.on('close', () => (held.closed = true));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      await checkInDispatcher(system, { name: 'silent', endpoint_url: `http://127.0.0.1:${port}`, labels: { suite: 'stall' } });
      const stalled = await createTask(system, { dispatcher_labels: { suite: 'stall' } });
      await waitFor(() => open.length > 0, 10_000, 'the request to reach the silent dispatcher');

      const healthy = await recorder();
      await checkInDispatcher(system, { name: 'lively', endpoint_url: healthy.url, labels: { suite: 'lively' } });
      expect((await createDispatchedTask(system, { dispatcher_labels: { suite: 'lively' } })).body.status).toBe('dispatched');
      // Sent while the silent dispatcher's request is still open: it did not wait behind it.
      expect(open[0].closed).toBe(false);
      expect((await getTask(system, stalled.body.guid)).body.status).toBe('pending');
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('fails over to the next candidate when a dispatcher errs', async () => {
    const [broken, healthy] = [await recorder(), await recorder()];
    broken.reply = () => ({ status: 503, body: { ok: false, error: { code: 'unavailable', message: 'draining' } } });
    await checkInDispatcher(system, { name: 'a-broken', endpoint_url: broken.url, labels: { suite: 'failover' } });
    await checkInDispatcher(system, { name: 'b-healthy', endpoint_url: healthy.url, labels: { suite: 'failover' } });
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'failover' } });
    expect(created.body).toMatchObject({ status: 'dispatched', dispatcher: 'b-healthy', dispatch_attempts: 2 });
    expect(broken.taskRequests).toHaveLength(1);
    // Each attempt carries its own callback token; only the last one is valid.
    expect(broken.taskRequests[0].body.callback_token).not.toBe(healthy.taskRequests[0].body.callback_token);
    const stale = await sendSigned(system, created.body.guid, 'callback', { status: 'completed' }, { token: broken.taskRequests[0].body.callback_token });
    expect(stale.status).toBe(401);
  });

  it('keeps a task pending while no dispatcher fits, and sends it once one checks in', async () => {
    const created = await createTask(system, { dispatcher_labels: { suite: 'later' } });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('pending');
    const waiting = await waitFor(async () => (await getTask(system, created.body.guid)).body.last_dispatch_error as string | null, 10_000, 'a dispatch round');
    expect(waiting).toContain('No online dispatcher');

    const dispatcher = await recorder();
    await checkInDispatcher(system, { name: 'latecomer', endpoint_url: dispatcher.url, labels: { suite: 'later' } });
    await waitFor(async () => ((await getTask(system, created.body.guid)).body.status === 'dispatched' ? true : undefined), 10_000, 'dispatch');
    expect(dispatcher.taskRequests.map((r) => r.body.task_id)).toEqual([created.body.guid]);
  });

  it('retries while every dispatcher is down, and fails the task when every one refuses it', async () => {
    const down = await recorder();
    down.reply = () => ({ status: 502, body: {} });
    await checkInDispatcher(system, { name: 'down', endpoint_url: down.url, labels: { suite: 'down' } });
    const waiting = await createTask(system, { dispatcher_labels: { suite: 'down' } });
    expect(waiting.body.status).toBe('pending');
    await waitFor(() => (down.taskRequests.length >= 2 ? true : undefined), 10_000, 'a second try');
    // A re-send to the same dispatcher is the same request, so a dispatcher that did accept
    // the first one (its answer lost) answers the copy idempotently.
    expect(down.taskRequests[1].body).toEqual(down.taskRequests[0].body);
    down.reply = () => ({ status: 201, body: { ok: true } });
    await waitFor(async () => ((await getTask(system, waiting.body.guid)).body.status === 'dispatched' ? true : undefined), 10_000, 'dispatch');

    const picky = await recorder();
    picky.reply = () => ({ status: 400, body: { ok: false, error: { code: 'invalid', message: 'image is not mapped' } } });
    await checkInDispatcher(system, { name: 'picky', endpoint_url: picky.url, labels: { suite: 'refuse' } });
    // A refusal by every dispatcher is an `infra` ending: the default policy tries it again,
    // so this task asks for one attempt only (task-attempt-callbacks.e2e-spec.ts covers the retries).
    const refused = await createDispatchedTask(system, { dispatcher_labels: { suite: 'refuse' }, retry: { max_attempts: 1 } });
    expect(refused.body.status).toBe('failed');
    expect(refused.body.error_message).toContain('image is not mapped');
    expect(refused.body.dead_letter).toBe(true);
  });
});
