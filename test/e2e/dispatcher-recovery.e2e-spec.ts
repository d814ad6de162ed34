import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);

describe('recovery after a dispatcher restart (process engine)', () => {
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { MAX_CONCURRENT_TASKS: '1' } });
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
  });

  const sleepTask = (seconds: number) => {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: String(seconds) } });
    request.callback_url = receiver.callbackUrl(request.task_id);
    return request;
  };

  it('fails a task whose agent process is gone, and starts the pending one after it', async () => {
    const api = taskApi(system);
    const running = sleepTask(60);
    const waiting = sleepTask(1);
    await api.create(running);
    await waitForStatus(system, running.task_id, ['running']);
    await api.create(waiting);
    expect((await api.get(waiting.task_id)).body.data.status).toBe('pending');

    await system.restart();

    const gone = await waitForStatus(system, running.task_id, ['failed', 'completed', 'timed_out', 'cancelled']);
    expect(gone).toMatchObject({ status: 'failed', exit_code: -1, error_message: expect.stringMatching(/agent process \d+ is gone/) });
    const callback = await waitFor(async () => receiver.callbacks().find((r) => r.path.includes(running.task_id)), 10_000, 'the callback');
    expect(callback.body).toMatchObject({ status: 'failed', error_message: gone.error_message });

    const next = await waitForStatus(system, waiting.task_id, ['completed', 'failed'], 20_000);
    expect(next.status).toBe('completed');
    expect((await api.logs(running.task_id)).text).toContain('[sleep] sleeping 60 s');
  });
});
