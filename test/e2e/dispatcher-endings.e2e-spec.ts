import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);
describe('how tasks end: failure, crash, time-out, cancel', () => {
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let api: ReturnType<typeof taskApi>;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/missing': '/nonexistent/agent --flag' }) } });
    receiver = await startCallbackReceiver();
    api = taskApi(system);
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
  });

  async function start(image: string, overrides: Record<string, unknown> = {}) {
    const request = makeTaskRequest({ agent_image: image, brief_key: '', ...overrides });
    request.callback_url = receiver.callbackUrl(request.task_id);
    expect((await api.create(request)).status).toBe(201);
    return request;
  }

  const callbackOf = (taskId: string) => waitFor(async () => receiver.callbacks().find((r) => r.path.includes(taskId)), 10_000, 'the callback');

  it('an agent that checks back failed ends failed with its error', async () => {
    const request = await start('agent-examples/fail', { env: { FAIL_MESSAGE: 'no luck' } });
    const task = await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out', 'cancelled']);
    expect(task).toMatchObject({ status: 'failed', error_message: 'no luck', result_metadata: { reason: 'example' } });
    expect((await callbackOf(request.task_id)).body).toEqual({
      status: 'failed', exit_code: 1, result_key: '', result_metadata: { reason: 'example' }, error_message: 'no luck',
    });
  });

  it('an agent that exits without checking back ends failed with its exit code', async () => {
    const request = await start('agent-examples/crash');
    const task = await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out', 'cancelled']);
    expect(task).toMatchObject({ status: 'failed', exit_code: 3, error_message: 'The agent exited with code 3 without checking back.' });
    expect((await callbackOf(request.task_id)).body).toMatchObject({ status: 'failed', exit_code: 3, error_message: task.error_message });
    expect((await api.logs(request.task_id)).text).toContain('[crash] exiting with code 3');
  });

  it('an agent still running at its deadline is stopped and ends timed_out', async () => {
    const request = await start('agent-examples/sleep', { timeout_seconds: 2, env: { SLEEP_SECONDS: '60' } });
    await waitForStatus(system, request.task_id, ['running']);
    const task = await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out', 'cancelled'], 10_000);
    expect(task).toMatchObject({ status: 'timed_out', exit_code: -1, error_message: 'The task did not finish within 2 s.' });
    expect(Date.parse(task.finished_at) - Date.parse(task.started_at)).toBeGreaterThanOrEqual(2000);
    expect((await callbackOf(request.task_id)).body).toMatchObject({ status: 'timed_out', exit_code: -1 });
    await waitFor(async () => (await api.logs(request.task_id)).text.includes('SIGTERM received'), 5000, 'the agent to get SIGTERM');
  });

  it('a cancelled task stops its agent and is reported as failed with reason cancelled', async () => {
    const request = await start('agent-examples/sleep', { env: { SLEEP_SECONDS: '60' } });
    await waitForStatus(system, request.task_id, ['running']);
    const cancelled = await api.cancel(request.task_id);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', exit_code: -1, error_message: 'cancelled' });
    expect((await callbackOf(request.task_id)).body).toEqual({
      status: 'failed', exit_code: -1, result_key: '', result_metadata: { reason: 'cancelled' }, error_message: 'cancelled',
    });
    await waitFor(async () => (await api.logs(request.task_id)).text.includes('SIGTERM received'), 5000, 'the agent to get SIGTERM');
    expect((await api.get(request.task_id)).body.data.status).toBe('cancelled');
  });

  it('an agent that cannot start ends failed with the runtime\'s reason', async () => {
    const request = await start('test/missing');
    const task = await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out', 'cancelled']);
    expect(task).toMatchObject({ status: 'failed', exit_code: -1, error_message: expect.stringContaining('ENOENT') });
    expect((await callbackOf(request.task_id)).body).toMatchObject({ status: 'failed', error_message: task.error_message });
  });
});
