import { checkInDispatcher, createDispatchedTask, createTask, getTask, sendSigned } from '../harness/controller-tasks';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

describe('tasks under concurrency', () => {
  let system: TestSystem;
  let replica: TestSystem;
  const dispatchers: RecordingDispatcher[] = [];

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
    // A second controller replica on the same database and secrets.
    const env = { TASK_DISPATCH_RETRY_SECONDS: '1', SECRET_KEY: system.config.secretKey, CALLBACK_SIGNING_KEY: system.config.callbackSigningKey!, API_TOKEN: system.apiToken };
    replica = await startTestSystem({ role: 'controller', databaseUrl: system.config.databaseUrl!, env });
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.stop()));
    await replica?.close();
    await system?.close();
  });

  const recorder = async (name: string, labels: Record<string, string>) => {
    const dispatcher = await new RecordingDispatcher().start();
    dispatchers.push(dispatcher);
    await checkInDispatcher(system, { name, endpoint_url: dispatcher.url, labels });
    return dispatcher;
  };

  it('applies one of many identical callbacks and calls the rest duplicates', async () => {
    const dispatcher = await recorder('same', { suite: 'same' });
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'same' } });
    const token = dispatcher.taskRequests[0].body.callback_token;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => sendSigned(i % 2 ? replica : system, created.body.guid, 'callback', { status: 'completed', exit_code: 0 }, { token })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
  });

  it('lets exactly one of two different final statuses win', async () => {
    const dispatcher = await recorder('split', { suite: 'split' });
    const created = await createDispatchedTask(system, { dispatcher_labels: { suite: 'split' } });
    const token = dispatcher.taskRequests[0].body.callback_token;
    const [a, b] = await Promise.all([
      sendSigned(system, created.body.guid, 'callback', { status: 'completed', exit_code: 0 }, { token }),
      sendSigned(replica, created.body.guid, 'callback', { status: 'failed', exit_code: 1 }, { token }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? 'completed' : 'failed';
    expect((await getTask(system, created.body.guid)).body.status).toBe(winner);
  });

  it('sends each waiting task once although two replicas retry them', async () => {
    const waiting = await Promise.all(Array.from({ length: 6 }, () => createTask(system, { dispatcher_labels: { suite: 'replicas' } })));
    expect(waiting.every((t) => t.body.status === 'pending')).toBe(true);
    const dispatcher = await recorder('shared', { suite: 'replicas' });
    await waitFor(async () => {
      const states = await Promise.all(waiting.map(async (t) => (await getTask(replica, t.body.guid)).body.status));
      return states.every((s) => s === 'dispatched') ? true : undefined;
    }, 15_000, 'every task dispatched');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const sent = dispatcher.taskRequests.map((r) => r.body.task_id).sort();
    expect(sent).toEqual(waiting.map((t) => t.body.guid).sort());
  });
});
