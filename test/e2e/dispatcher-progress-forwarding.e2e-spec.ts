import { agentApi, agentKeyOf, makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The forwarder sends a task's reports at least a second apart by its own clock; the receiver
 * stamps them on arrival, and each request's own delivery time (tens of ms on a loaded machine)
 * moves its stamp: a report sent at once after the first would arrive well under this.
 */
const SPACING_SEEN_MS = 800;

// The silent image checks in with nobody: each test plays the agent through the agent API.
jest.setTimeout(60_000);
describe('progress forwarding to the controller', () => {
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

  async function runningTask() {
    const request = makeTaskRequest({ agent_image: 'test/silent' });
    request.callback_url = receiver.callbackUrl(request.task_id);
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitForStatus(system, request.task_id, ['starting'], 20_000);
    const agent = agentApi(system, agentKeyOf(system, request.task_id));
    expect((await agent.checkin({ task_id: request.task_id })).status).toBe(200);
    return { request, agent };
  }

  /** What the controller saw for the task: its progress reports and the callback, in order of arrival. */
  async function seenBy(taskId: string) {
    await waitFor(async () => receiver.callbacks().some((r) => r.path.includes(taskId)), 15_000, 'the callback');
    return receiver.received.filter((r) => r.path.includes(taskId));
  }

  it('forwards the last report before the check-back, ahead of the callback, one a second at most', async () => {
    const { request, agent } = await runningTask();
    for (const percentage of [10, 50, 90, 100]) {
      expect((await agent.progress({ task_id: request.task_id, percentage, message: `at ${percentage}` })).status).toBe(200);
    }
    expect((await agent.checkback({ task_id: request.task_id, status: 'completed' })).status).toBe(200);

    const seen = await seenBy(request.task_id);
    const kinds = seen.map((r) => (r.path.endsWith('/callback/') ? 'callback' : r.body.percentage));
    expect(kinds[0]).toBe(10);
    expect(kinds.slice(-2)).toEqual([100, 'callback']);
    const reports = seen.filter((r) => r.path.endsWith('/progress/'));
    for (let i = 1; i < reports.length; i += 1) expect(reports[i].at - reports[i - 1].at).toBeGreaterThanOrEqual(SPACING_SEEN_MS);
    expect(reports[reports.length - 1].body).toEqual({ percentage: 100, message: 'at 100', data: {} });
  });

  it('sends a held-back report when its second is over, while the task runs on', async () => {
    const { request, agent } = await runningTask();
    await agent.progress({ task_id: request.task_id, percentage: 20, message: 'first' });
    await agent.progress({ task_id: request.task_id, percentage: 40, message: 'held back' });
    const reports = await waitFor(async () => {
      const mine = receiver.progress().filter((r) => r.path.includes(request.task_id));
      return mine.length >= 2 && mine;
    }, 10_000, 'the trailing report');
    expect(reports.map((r) => r.body.percentage)).toEqual([20, 40]);
    expect(reports[1].at - reports[0].at).toBeGreaterThanOrEqual(SPACING_SEEN_MS);

    expect((await agent.checkback({ task_id: request.task_id, status: 'failed', error: 'gave up' })).status).toBe(200);
    const seen = await seenBy(request.task_id);
    expect(seen.map((r) => (r.path.endsWith('/callback/') ? 'callback' : r.body.percentage))).toEqual([20, 40, 'callback']);
  });
});
