import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { clientBearer, dispatchedTask, makeTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The whole path through both real roles: an orchestrator holding only OAuth client
 * credentials creates a task, the controller dispatches it to the dispatcher, the echo agent
 * runs as a process, and the dispatcher's signed callback closes the task.
 */
describe('a controller task run by the real dispatcher', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem();
    // In the all role the dispatcher registers itself with its controller as "local".
    const local = await waitFor(async () => {
      const answer = await http('GET', `${system.controllerUrl}/api/v1/dispatchers/local/`, { headers: operator(system) });
      return answer.body?.state === 'online' ? answer : undefined;
    }, 15_000, 'the dispatcher to register');
    // Its own API_KEY differs from the controller's DISPATCHER_API_KEY here, so the tasks
    // below are accepted only through the key it sent at check-in.
    expect(local.body).toMatchObject({ endpoint_url: system.dispatcherUrl, backends: ['local'], has_api_key: true });
    expect(system.config.dispatcherApiKey).not.toBe(system.apiKey);
  });
  afterAll(() => system?.close());

  it('runs agent-examples/echo and records its result', async () => {
    const orchestrator = await clientBearer(system, ['tasks:read', 'tasks:write']);
    const created = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      headers: orchestrator,
      json: makeTask({ agent_image: 'agent-examples/echo', brief: { question: 'echo me' }, timeout_seconds: 60 }),
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'pending', dispatcher: null });
    const guid = created.body.guid;
    expect((await dispatchedTask(system, guid)).body.dispatcher).toBe('local');

    const onDispatcher = await http('GET', `${system.dispatcherUrl}/tasks/${guid}`, { headers: { 'x-api-key': system.apiKey } });
    expect(onDispatcher.status).toBe(200);
    expect(onDispatcher.body.data).toMatchObject({ task_id: guid, callback_url: `${system.controllerUrl}/api/v1/tasks/${guid}/callback/` });

    const done = await waitFor(async () => {
      const answer = await http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/`, { headers: orchestrator });
      return ['completed', 'failed', 'timed_out'].includes(answer.body.status) ? answer : undefined;
    }, 45_000, 'the task to finish');
    expect(done.body).toMatchObject({
      status: 'completed',
      result: { result_key: `results/${guid}/result.json`, result_metadata: { echoed: true }, error_message: '' },
    });

    const stored = await createObjectStorage(system.config).get(`results/${guid}/result.json`);
    expect(JSON.parse((await readAll(stored!)).toString('utf8'))).toMatchObject({ task_id: guid, brief: { question: 'echo me' } });
  }, 60_000);

  it('cancels a running agent and records cancelled when the dispatcher reports it', async () => {
    const operatorHeaders = { authorization: `Token ${system.apiToken}` };
    const created = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      headers: operatorHeaders,
      json: makeTask({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '600' }, timeout_seconds: 900 }),
    });
    const guid = created.body.guid;
    await dispatchedTask(system, guid);
    await waitFor(async () => {
      const task = await http('GET', `${system.dispatcherUrl}/tasks/${guid}`, { headers: { 'x-api-key': system.apiKey } });
      return task.body.data?.status === 'running' ? true : undefined;
    }, 20_000, 'the agent to check in');

    const cancel = await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/cancel/`, { headers: operatorHeaders });
    expect(cancel.status).toBe(200);
    expect(cancel.body.cancel_requested).toBe(true);
    const done = await waitFor(async () => {
      const answer = await http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/`, { headers: operatorHeaders });
      return ['completed', 'failed', 'timed_out', 'cancelled'].includes(answer.body.status) ? answer : undefined;
    }, 30_000, 'the cancel to be reported');
    expect(done.body.status).toBe('cancelled');
    expect(done.body.result.result_metadata).toMatchObject({ reason: 'cancelled' });
  }, 60_000);
});
