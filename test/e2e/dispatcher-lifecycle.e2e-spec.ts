import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { agentApi, agentKeyOf, expectedSignature, makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);
describe('the life of a task with the echo agent', () => {
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/silent': 'sleep 30' }) } });
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
  });

  async function runEcho() {
    const storage = createObjectStorage(system.config);
    const request = makeTaskRequest({ agent_image: 'agent-examples/echo' });
    request.callback_url = receiver.callbackUrl(request.task_id);
    await storage.put(request.brief_key, Buffer.from(JSON.stringify({ question: 'ping?' })));
    const api = taskApi(system);
    const created = await api.create(request);
    const seen = [created.body.data.status];
    const task = await waitFor(async () => {
      const { data } = (await api.get(request.task_id)).body;
      if (seen[seen.length - 1] !== data.status) seen.push(data.status);
      return data.status === 'completed' ? data : null;
    }, 30_000, 'echo to complete');
    return { request, task, seen, storage, api };
  }

  it('goes pending -> starting -> running -> completed, with progress, a result and a signed callback', async () => {
    const { request, task, seen, storage, api } = await runEcho();
    const order = ['pending', 'starting', 'running', 'completed'];
    expect(seen.map((status) => order.indexOf(status))).toEqual([...seen.map((status) => order.indexOf(status))].sort());
    expect(seen[0]).toBe('pending');
    expect(task).toMatchObject({
      exit_code: 0,
      error_message: null,
      result_key: `results/${request.task_id}/result.json`,
      progress: { percentage: 100, message: 'result written' },
      runtime: { backend: 'local', ref: expect.stringMatching(/^\d+$/) },
    });
    expect(Date.parse(task.started_at)).toBeLessThanOrEqual(Date.parse(task.finished_at));

    const result = JSON.parse((await readAll((await storage.get(task.result_key))!)).toString());
    expect(result).toMatchObject({ task_id: request.task_id, brief: { question: 'ping?' } });
    expect(result.env_keys).toEqual(['GREETING']);

    const callbacks = await waitFor(async () => receiver.callbacks().filter((r) => r.path.includes(request.task_id)).length > 0
      && receiver.callbacks().filter((r) => r.path.includes(request.task_id)), 10_000, 'the callback');
    expect(callbacks).toHaveLength(1);
    const [callback] = callbacks;
    expect(callback.body).toEqual({
      status: 'completed', exit_code: 0, result_key: task.result_key, result_metadata: { echoed: true }, error_message: '',
    });
    expect(callback.headers.authorization).toBe(`Bearer ${request.callback_token}`);
    expect(callback.headers['x-service-signature']).toBe(expectedSignature(system, callback.raw));
    await waitFor(async () => (await api.get(request.task_id)).body.data.callback.state === 'delivered', 5000, 'delivered state');
    expect((await api.get(request.task_id)).body.data.callback).toEqual({ state: 'delivered', attempts: 1, last_error: null });

    const progress = receiver.progress().filter((r) => r.path === `/api/v1/tasks/${request.task_id}/progress/`);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0].headers.authorization).toBe(`Bearer ${request.callback_token}`);
    expect(progress[progress.length - 1].body).toMatchObject({ percentage: 100, message: 'result written' });
  });

  it('keeps the agent output for GET /tasks/{id}/logs, with ?tail', async () => {
    const { request, api } = await runEcho();
    await waitFor(async () => (await api.logs(request.task_id)).text.includes('[echo] completed'), 10_000, 'the last log line');
    const logs = await api.logs(request.task_id);
    expect(logs.status).toBe(200);
    expect(logs.headers.get('content-type')).toContain('text/plain');
    expect(logs.text).toContain(`[echo] task ${request.task_id} starting`);
    const tail = await api.logs(request.task_id, '?tail=1');
    expect(tail.text.trim().split('\n')).toEqual([expect.stringContaining('[echo] completed')]);
  });

  it('forwards progress at most once a second per task, the latest report winning', async () => {
    const request = makeTaskRequest({ agent_image: 'test/silent', brief_key: '' });
    request.callback_url = receiver.callbackUrl(request.task_id);
    await taskApi(system).create(request);
    await waitForStatus(system, request.task_id, ['starting']);
    const agent = agentApi(system, agentKeyOf(system, request.task_id));
    await agent.checkin({ task_id: request.task_id });
    for (const percentage of [10, 20, 30, 40, 50]) await agent.progress({ task_id: request.task_id, percentage, message: `at ${percentage}` });
    const forwarded = () => receiver.progress().filter((r) => r.path.includes(request.task_id));
    await waitFor(async () => forwarded().length >= 2, 5000, 'the held-back report');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(forwarded().map((r) => r.body.percentage)).toEqual([10, 50]);
    expect(forwarded()[1].body).toEqual({ percentage: 50, message: 'at 50', data: {} });
    await taskApi(system).cancel(request.task_id);
  });
});
