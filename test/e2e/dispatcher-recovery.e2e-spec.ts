import { agentProcesses } from '../harness/agent-processes';
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

  it('finds its running agent again after a restart: the task completes with that agent, and the pending one starts after it', async () => {
    const api = taskApi(system);
    const running = sleepTask(8);
    const waiting = sleepTask(1);
    await api.create(running);
    await waitForStatus(system, running.task_id, ['running']);
    await api.create(waiting);
    expect((await api.get(waiting.task_id)).body.data.status).toBe('pending');
    const [agent] = agentProcesses(running.task_id);
    expect(agent).toBeDefined();

    await system.restart();

    // The agent lives in the spawner, not in the dispatcher: the restart neither ends nor repeats it.
    expect(agentProcesses(running.task_id)).toEqual([agent]);
    const done = await waitForStatus(system, running.task_id, ['failed', 'completed', 'timed_out', 'cancelled'], 30_000);
    expect(done).toMatchObject({ status: 'completed', exit_code: 0 });
    const callback = await waitFor(async () => receiver.callbacks().find((r) => r.path.includes(running.task_id)), 10_000, 'the callback');
    expect(callback.body).toMatchObject({ status: 'completed' });
    const logs = (await api.logs(running.task_id)).text;
    expect(logs.match(/task \S+ starting/g)).toHaveLength(1);
    expect(logs).toContain('[sleep] sleeping 8 s');

    const next = await waitForStatus(system, waiting.task_id, ['completed', 'failed'], 20_000);
    expect(next.status).toBe('completed');
  });
});
