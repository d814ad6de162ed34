import { DispatchLoop } from '../../src/controller/tasks/dispatch-loop';
import { checkInDispatcher, createTask, dispatchedTask } from '../harness/controller-tasks';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * A task stored by one controller replica wakes the dispatch loop of another through
 * PostgreSQL LISTEN/NOTIFY. The loops' timers are an hour here, so only the notification
 * can have sent it.
 */
describe('dispatch wake-ups across controller replicas', () => {
  let storing: TestSystem;
  let sending: TestSystem;
  let dispatcher: RecordingDispatcher;

  beforeAll(async () => {
    const env = { TASK_DISPATCH_RETRY_SECONDS: '3600' };
    storing = await startTestSystem({ role: 'controller', env });
    sending = await startTestSystem({
      role: 'controller',
      databaseUrl: storing.config.databaseUrl!,
      env: { ...env, SECRET_KEY: storing.config.secretKey, CALLBACK_SIGNING_KEY: storing.config.callbackSigningKey!, API_TOKEN: storing.apiToken },
    });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(storing, { name: 'woken', endpoint_url: dispatcher.url, labels: { suite: 'wake' } });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await sending?.close();
    await storing?.close();
  });

  it('dispatches from the other replica a task stored where no dispatch loop runs', async () => {
    await storing.controller!.get(DispatchLoop).onApplicationShutdown();
    const created = await createTask(storing, { dispatcher_labels: { suite: 'wake' } });
    expect(created.body.status).toBe('pending');
    const dispatched = await dispatchedTask(storing, created.body.guid, 10_000);
    expect(dispatched.body).toMatchObject({ status: 'dispatched', dispatcher: 'woken' });
    expect(dispatcher.taskRequests.map((request) => request.body.task_id)).toEqual([created.body.guid]);
  });
});
