import { freePort } from '../harness/ports';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);
async function runFailTask(system: TestSystem, callbackUrlOf: (taskId: string) => string) {
  const request = makeTaskRequest({ agent_image: 'agent-examples/fail', brief_key: '' });
  request.callback_url = callbackUrlOf(request.task_id);
  expect((await taskApi(system).create(request)).status).toBe(201);
  await waitForStatus(system, request.task_id, ['failed']);
  return request;
}

function callbackStateOf(system: TestSystem, taskId: string, state: string) {
  return waitFor(async () => {
    const { data } = (await taskApi(system).get(taskId)).body;
    return data.callback.state === state ? data.callback : null;
  }, 30_000, `callback state ${state}`);
}

describe('durable callback delivery', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher' });
  });
  afterAll(() => system?.close());

  it('retries 503 three times with backoff, then stops at the one accepted delivery', async () => {
    const receiver = await startCallbackReceiver([503, 503, 503]);
    try {
      const request = await runFailTask(system, receiver.callbackUrl);
      const callback = await callbackStateOf(system, request.task_id, 'delivered');
      expect(callback).toEqual({ state: 'delivered', attempts: 4, last_error: null });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const answers = receiver.callbacks().map((r) => r.answeredWith);
      expect(answers).toEqual([503, 503, 503, 200]);
      expect(new Set(receiver.callbacks().map((r) => r.raw)).size).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('stops at once on a 4xx other than 408 and 429 and shows the failure', async () => {
    const receiver = await startCallbackReceiver([400]);
    try {
      const request = await runFailTask(system, receiver.callbackUrl);
      const callback = await callbackStateOf(system, request.task_id, 'failed');
      expect(callback).toEqual({ state: 'failed', attempts: 1, last_error: 'HTTP 400' });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(receiver.callbacks()).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('delivers a callback while the controller still sits on another one', async () => {
    const slow = await startCallbackReceiver([{ status: 200, headers: {}, delayMs: 6000 }]);
    const quick = await startCallbackReceiver();
    try {
      const held = await runFailTask(system, slow.callbackUrl);
      await waitFor(async () => slow.callbacks().length === 1, 10_000, 'the held callback to arrive');
      const other = await runFailTask(system, quick.callbackUrl);
      expect(await callbackStateOf(system, other.task_id, 'delivered')).toMatchObject({ attempts: 1 });
      expect((await taskApi(system).get(held.task_id)).body.data.callback).toMatchObject({ state: 'pending', attempts: 1 });
      expect(await callbackStateOf(system, held.task_id, 'delivered')).toEqual({ state: 'delivered', attempts: 1, last_error: null });
    } finally {
      await Promise.all([slow.close(), quick.close()]);
    }
  });

  it('delivers after a restart a callback whose receiver was down before it', async () => {
    const port = await freePort();
    const url = (taskId: string) => `http://127.0.0.1:${port}/api/v1/tasks/${taskId}/callback/`;
    const request = await runFailTask(system, url);
    // `attempts` counts an attempt as it starts; `last_error` comes when it has failed.
    await waitFor(async () => (await taskApi(system).get(request.task_id)).body.data.callback.last_error, 10_000, 'a first failed attempt');
    const before = (await taskApi(system).get(request.task_id)).body.data.callback;
    expect(before).toMatchObject({ state: 'pending', last_error: expect.stringMatching(/ECONNREFUSED/) });

    await system.restart();
    const receiver = await startCallbackReceiver([], port);
    try {
      const delivered = await waitFor(async () => receiver.callbacks().find((r) => r.path.includes(request.task_id)), 30_000, 'the callback after the restart');
      expect(delivered.body).toMatchObject({ status: 'failed', error_message: 'the example agent failed on purpose' });
      expect(delivered.headers.authorization).toBe(`Bearer ${request.callback_token}`);
      await waitFor(async () => (await taskApi(system).get(request.task_id)).body.data.callback.state === 'delivered', 5000, 'delivered');
    } finally {
      await receiver.close();
    }
  });
});

describe('callback delivery limits', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { CALLBACK_MAX_AGE_SECONDS: '4' } });
  });
  afterAll(() => system?.close());

  it('waits as long as Retry-After asks', async () => {
    const receiver = await startCallbackReceiver([{ status: 429, headers: { 'Retry-After': '2' } }]);
    try {
      const request = await runFailTask(system, receiver.callbackUrl);
      await callbackStateOf(system, request.task_id, 'delivered');
      const [first, second] = receiver.callbacks();
      expect([first.answeredWith, second.answeredWith]).toEqual([429, 200]);
      expect(second.at - first.at).toBeGreaterThanOrEqual(1900);
    } finally {
      await receiver.close();
    }
  });

  it('gives up once CALLBACK_MAX_AGE_SECONDS has passed', async () => {
    const port = await freePort();
    const request = await runFailTask(system, (taskId) => `http://127.0.0.1:${port}/api/v1/tasks/${taskId}/callback/`);
    const callback = await callbackStateOf(system, request.task_id, 'failed');
    expect(callback.attempts).toBeGreaterThanOrEqual(2);
    expect(callback.last_error).toMatch(/^gave up after \d+ attempts: ECONNREFUSED/);
  });
});
