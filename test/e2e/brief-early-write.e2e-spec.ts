import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { checkInDispatcher, createDispatchedTask, createTask, getTask } from '../harness/controller-tasks';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(60_000);

/**
 * An inline brief is written to object storage while its task waits in the queue, once
 * dispatchers are taking this controller's tasks; the batch that sends it takes that write
 * instead of making its own. With no dispatcher seen, nothing is written until one can take it.
 */
describe('inline briefs written while the task waits', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;
  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', storage: 's3', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
    dispatcher = await new RecordingDispatcher().start();
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });
  const storage = () => createObjectStorage(system.config);
  const briefOf = async (guid: string) => {
    const stream = await storage().get(`briefs/${guid}.json`);
    return stream ? JSON.parse((await readAll(stream)).toString('utf8')) : null;
  };

  it('writes nothing for a task no dispatcher can take yet', async () => {
    const waiting = await createTask(system, { brief: { prompt: 'nobody yet' } });
    expect(waiting.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await getTask(system, waiting.body.guid)).body.status).toBe('pending');
    expect(await briefOf(waiting.body.guid)).toBeNull();
  });

  it('has the brief of a task waiting for its concurrency key stored before the task is sent, and sends it with that brief', async () => {
    await checkInDispatcher(system, { name: 'early', endpoint_url: dispatcher.url, api_key: 'early-key' });
    const concurrency = { key: 'one-at-a-time', limit: 1, strategy: 'queue' };
    const first = await createDispatchedTask(system, { concurrency, brief: { prompt: 'first' } });
    expect(first.body.status).toBe('dispatched');

    const second = await createTask(system, { concurrency, brief: { prompt: 'second', n: 2 } });
    expect(second.status).toBe(201);
    const guid = second.body.guid as string;
    // Held by the key's limit, it waits in the queue with its brief already in object storage.
    expect(await waitFor(() => briefOf(guid), 10_000, 'the waiting task\'s brief in object storage')).toEqual({ prompt: 'second', n: 2 });
    expect((await getTask(system, guid)).body.status).toBe('pending');
    expect(dispatcher.taskRequests.map((request) => request.body.task_id)).not.toContain(guid);
  });
});
