import { checkInDispatcher, createTask, getTask, operator, sendSigned } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from '../harness/webhooks';

const START_FAILURE = {
  status: 'failed', exit_code: -1, result_key: '', result_metadata: {}, error_message: 'The agent could not be started: spawn /opt/agent ENOENT',
};

/**
 * Each attempt is its own dispatcher task with its own callback token: once attempt 2 has
 * begun, whatever attempt 1's dispatcher still sends is refused and changes nothing, and
 * cancel and logs reach attempt 2's task on the dispatcher.
 */
describe('callbacks of an earlier attempt', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(system, { name: 'attempts', endpoint_url: dispatcher.url, labels: { suite: 'attempts' }, api_key: 'attempts-key' });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });

  it('tries a task every dispatcher refused again, then ends it as a dead letter', async () => {
    const refusing = await new RecordingDispatcher().start();
    refusing.reply = () => ({ status: 400, body: { ok: false, error: { code: 'invalid', message: 'no command is mapped for image', details: {} } } });
    try {
      await checkInDispatcher(system, { name: 'refusing', endpoint_url: refusing.url, labels: { suite: 'refusing' } });
      const created = await createTask(system, { dispatcher_labels: { suite: 'refusing' }, retry: { max_attempts: 2, backoff_seconds: 1 } });
      const failed = await waitFor(async () => {
        const task = await getTask(system, created.body.guid);
        return task.body.status === 'failed' ? task : null;
      }, 15_000, 'both attempts to be refused');
      expect(failed.body).toMatchObject({ attempt: 2, dead_letter: true, error_message: expect.stringMatching(/^Every dispatcher refused the task: 400 from .*: no command is mapped for image$/) });
      expect(failed.body.attempts.map((a: any) => [a.attempt, a.status, a.reason])).toEqual([[1, 'failed', 'infra'], [2, 'failed', null]]);
      expect(refusing.taskRequests.map((request) => request.body.task_id)).toEqual([created.body.guid, failed.body.attempts[1].dispatcher_task_id]);
    } finally {
      await refusing.stop();
    }
  });

  it("gives a workflow's tasks the workflow's retry policy", async () => {
    const retry = { max_attempts: 4, backoff_seconds: 2, max_backoff_seconds: 30, on: ['infra', 'failed'] };
    const workflow = makeWorkflow('retrying-pushes', { retry }, { filter: { 'repository.full_name': 'acme/retrying' } });
    const created = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { headers: operator(system), json: workflow });
    expect(created.status).toBe(201);
    expect(created.body.retry).toEqual(retry);
    const refused = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, {
      headers: operator(system), json: makeWorkflow('bad-retry', { retry: { on: ['sometimes'], max_backoff_seconds: 0 } }),
    });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors).sort()).toEqual(['retry.max_backoff_seconds', 'retry.on']);
    const routed = await sendWebhook(system.controllerUrl, await signedWebhook('forge', pushPayload('acme/retrying')));
    expect(routed.status).toBe(200);
    expect((await getTask(system, routed.body.task_guid)).body).toMatchObject({ workflow: 'retrying-pushes', retry, max_attempts: 4 });
    await http('POST', `${system.controllerUrl}/api/v1/tasks/${routed.body.task_guid}/cancel/`, { headers: operator(system) });
  });

  const requestsFor = (guid: string) => dispatcher.taskRequests.filter((request) => request.body.callback_url.includes(guid));

  it('refuses a late callback and progress of attempt 1 with 409 after attempt 2 began, and changes nothing', async () => {
    const created = await createTask(system, { dispatcher_labels: { suite: 'attempts' }, retry: { backoff_seconds: 1 } });
    const guid = created.body.guid;
    const [first] = await waitFor(() => requestsFor(guid).length === 1 && requestsFor(guid), 15_000, 'attempt 1 to be sent');
    expect(first.body).toMatchObject({ task_id: guid, callback_url: `${system.controllerUrl}/api/v1/tasks/${guid}/callback/` });
    const firstToken = first.body.callback_token;
    await waitFor(async () => (await getTask(system, guid)).body.status === 'dispatched', 10_000, 'attempt 1 to be dispatched');

    const ended = await sendSigned(system, guid, 'callback', START_FAILURE, { token: firstToken });
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ status: 'ok', task_guid: guid, task_status: 'pending' });
    const waiting = await getTask(system, guid);
    expect(waiting.body).toMatchObject({ status: 'pending', attempt: 2, dispatcher: null, dead_letter: false, result: null, error_message: null });
    expect(Date.parse(waiting.body.next_attempt_at)).toBeLessThanOrEqual(Date.now() + 1100);
    expect(waiting.body.last_dispatch_error).toMatch(/^Attempt 1 failed \(infra\): The agent could not be started/);

    const second = await waitFor(() => requestsFor(guid)[1], 15_000, 'attempt 2 to be sent');
    // Same controller task (its callback and progress URLs), a new dispatcher task id and token.
    expect(second.body.task_id).not.toBe(guid);
    expect(second.body.callback_url).toBe(first.body.callback_url);
    expect(second.body.callback_token).not.toBe(firstToken);
    const running = await waitFor(async () => {
      const task = await getTask(system, guid);
      return task.body.status === 'dispatched' ? task : null;
    }, 10_000, 'attempt 2 to be dispatched');

    for (const [kind, body] of [['callback', { ...START_FAILURE, status: 'completed', exit_code: 0 }], ['callback', START_FAILURE], ['progress', { percentage: 90 }]] as const) {
      const late = await sendSigned(system, guid, kind, body, { token: firstToken });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ code: 'conflict' });
    }
    const unchanged = await getTask(system, guid);
    expect(unchanged.body).toEqual(running.body);
    expect(unchanged.body.attempts.map((a: any) => [a.attempt, a.dispatcher_task_id, a.status])).toEqual([
      [1, guid, 'failed'], [2, second.body.task_id, 'dispatched'],
    ]);

    // Attempt 2's own reports are taken; a cancel goes to attempt 2's dispatcher task.
    expect((await sendSigned(system, guid, 'progress', { percentage: 10 }, { token: second.body.callback_token })).status).toBe(200);
    expect((await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/cancel/`, { headers: operator(system) })).status).toBe(200);
    // This task's cancels only: the workflow test above cancels its own task on the same dispatcher, once it got there.
    const cancels = dispatcher.requests.filter((request) => request.path.endsWith('/cancel') && [guid, second.body.task_id].some((id) => request.path.includes(id)));
    expect(cancels.map((request) => request.path)).toEqual([`/tasks/${second.body.task_id}/cancel`]);
    const cancelled = await sendSigned(system, guid, 'callback', { ...START_FAILURE, result_metadata: { reason: 'cancelled' }, error_message: 'cancelled' }, {
      token: second.body.callback_token,
    });
    expect(cancelled.body).toMatchObject({ task_status: 'cancelled' });
    expect((await getTask(system, guid)).body).toMatchObject({ status: 'cancelled', attempt: 2, dead_letter: false });
  });
});
