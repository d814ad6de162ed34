import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(120_000);

const TASKS = 50;
const CAPACITY = 5;

/** The most tasks whose [started_at, finished_at) intervals overlap at any moment. */
function peakConcurrency(tasks: { started_at: string; finished_at: string }[]): number {
  const events = tasks.flatMap((task) => [
    [Date.parse(task.started_at), 1],
    [Date.parse(task.finished_at), -1],
  ]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let peak = 0;
  for (const [, delta] of events) peak = Math.max(peak, (running += delta));
  return peak;
}

describe('MAX_CONCURRENT_TASKS', () => {
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { MAX_CONCURRENT_TASKS: String(CAPACITY) } });
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
  });

  it(`runs ${TASKS} tasks created at once never more than ${CAPACITY} at a time, in arrival order, and finishes them all`, async () => {
    const api = taskApi(system);
    const requests = Array.from({ length: TASKS }, () => {
      const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '1' } });
      request.callback_url = receiver.callbackUrl(request.task_id);
      return request;
    });
    const created = await Promise.all(requests.map((request) => api.create(request)));
    expect(created.map((answer) => answer.status)).toEqual(requests.map(() => 201));

    let peakSeen = 0;
    const tasks = await waitFor(async () => {
      const { data } = (await api.list('?limit=500')).body;
      const live = data.tasks.filter((task: { status: string }) => ['starting', 'running'].includes(task.status)).length;
      peakSeen = Math.max(peakSeen, live);
      return data.tasks.every((task: { status: string }) => task.status === 'completed') && data.tasks;
    }, 100_000, 'every task to complete');

    expect(tasks).toHaveLength(TASKS);
    expect(peakSeen).toBeLessThanOrEqual(CAPACITY);
    expect(peakSeen).toBeGreaterThan(1);
    expect(peakConcurrency(tasks)).toBeLessThanOrEqual(CAPACITY);

    // The list is newest first; read backwards it is the order of arrival, and the tasks
    // started in that order (timestamps in milliseconds, so equal ones are allowed).
    const byArrival = [...tasks].reverse();
    const arrivals = byArrival.map((task) => Date.parse(task.created_at));
    expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
    const starts = byArrival.map((task) => Date.parse(task.started_at));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));

    await waitFor(async () => receiver.callbacks().length >= TASKS, 20_000, 'every callback');
    expect(receiver.callbacks()).toHaveLength(TASKS);
  });
});
