import { createHmac } from 'node:crypto';
import { checkInDispatcher, createDispatchedTask, createTask, getTask, sendSigned } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

describe('task callbacks, progress and the watchdog', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;

  /** A task dispatched to the recording dispatcher, with the callback token it was given. */
  const dispatchedTask = async (overrides: Record<string, unknown> = {}) => {
    const created = await createDispatchedTask(system, overrides);
    expect(created.body.status).toBe('dispatched');
    const token: string = dispatcher.taskRequests.find((r) => r.body.task_id === created.body.guid)!.body.callback_token;
    return { guid: created.body.guid as string, token };
  };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1', TASK_WATCHDOG_GRACE_SECONDS: '1' } });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(system, { name: 'recorder', endpoint_url: dispatcher.url, heartbeat_interval_seconds: 3600 });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });

  it('refuses a callback signed with the wrong key (403) and changes nothing', async () => {
    const { guid, token } = await dispatchedTask();
    const before = await getTask(system, guid);
    const forged = await sendSigned(system, guid, 'callback', { status: 'completed', exit_code: 0 }, { token, key: 'not-the-signing-key' });
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe('invalid_signature');
    const unsigned = await sendSigned(system, guid, 'callback', { status: 'completed' }, { token, key: null });
    expect(unsigned.status).toBe(403);
    const upperCase = await sendSigned(system, guid, 'callback', { status: 'completed' }, { token, signature: 'sha256=' + 'A'.repeat(64) });
    expect(upperCase.status).toBe(403);
    expect((await getTask(system, guid)).body).toEqual(before.body);
  });

  it('checks the signature on the raw bytes, before reading the JSON', async () => {
    const { guid, token } = await dispatchedTask();
    const body = '{"status":"completed",  "exit_code":0}';
    const reformatted = JSON.stringify(JSON.parse(body));
    const signatureOfOtherBytes = `sha256=${createHmac('sha256', system.config.callbackSigningKey!).update(reformatted).digest('hex')}`;
    const answer = await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/callback/`, {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-service-signature': signatureOfOtherBytes },
      body,
    });
    expect(answer.status).toBe(403);
    // An invalid body under a bad signature is refused for the signature, not read as 400.
    const invalidBodyBadSignature = await sendSigned(system, guid, 'callback', { status: 'done' }, { token, key: 'wrong' });
    expect(invalidBodyBadSignature.status).toBe(403);
  });

  it('answers 401 without the task\'s Bearer token, and 404 for an unknown task', async () => {
    const { guid } = await dispatchedTask();
    const missing = await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/callback/`, { json: { status: 'completed' } });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toContain('Bearer');
    const wrong = await sendSigned(system, guid, 'callback', { status: 'completed' }, { token: 'someone-elses-token' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('authentication_failed');
    const unknown = await sendSigned(system, '00000000-0000-4000-8000-000000000000', 'callback', { status: 'completed' }, { token: 'x' });
    expect(unknown.status).toBe(404);
    expect((await getTask(system, guid)).body.status).toBe('dispatched');
  });

  it('answers a repeat with duplicate: true, a different final status with 409, a bad body with 400', async () => {
    const { guid, token } = await dispatchedTask();
    const invalid = await sendSigned(system, guid, 'callback', { status: 'finished', exit_code: 'zero' }, { token });
    expect(invalid.status).toBe(400);
    expect(Object.keys(invalid.body.errors).sort()).toEqual(['exit_code', 'status']);

    const body = { status: 'failed', exit_code: 3, result_key: '', result_metadata: {}, error_message: 'agent crashed' };
    expect((await sendSigned(system, guid, 'callback', body, { token })).body).toEqual({ status: 'ok', task_guid: guid, task_status: 'failed' });
    const repeat = await sendSigned(system, guid, 'callback', body, { token });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual({ status: 'ok', task_guid: guid, task_status: 'failed', duplicate: true });
    const contradiction = await sendSigned(system, guid, 'callback', { status: 'completed', exit_code: 0 }, { token });
    expect(contradiction.status).toBe(409);
    expect(contradiction.body.code).toBe('conflict');
    expect((await getTask(system, guid)).body).toMatchObject({ status: 'failed', result: { exit_code: 3, error_message: 'agent crashed' } });
  });

  it('keeps progress, moving a dispatched task to running; refuses it after the end', async () => {
    const { guid, token } = await dispatchedTask();
    const report = await sendSigned(system, guid, 'progress', { percentage: 40, message: 'halfway-ish', data: { step: 2 } }, { token });
    expect(report.status).toBe(200);
    expect(report.body).toEqual({ status: 'ok', task_guid: guid, task_status: 'running' });
    const detail = await getTask(system, guid);
    expect(detail.body).toMatchObject({ status: 'running', progress: { percentage: 40, message: 'halfway-ish', data: { step: 2 } } });
    expect(detail.body.started_at).not.toBeNull();

    expect((await sendSigned(system, guid, 'progress', { percentage: 101 }, { token })).status).toBe(400);
    expect((await sendSigned(system, guid, 'progress', { percentage: 50 }, { token: 'wrong' })).status).toBe(401);
    await sendSigned(system, guid, 'callback', { status: 'completed', exit_code: 0 }, { token });
    expect((await sendSigned(system, guid, 'progress', { percentage: 90 }, { token })).status).toBe(409);
  });

  it('cancels through the dispatcher and records cancelled when the dispatcher reports it', async () => {
    const { guid, token } = await dispatchedTask();
    const auth = { authorization: `Token ${system.apiToken}` };
    const cancel = await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/cancel/`, { headers: auth });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ status: 'dispatched', cancel_requested: true });
    const sent = dispatcher.requests.find((r) => r.path === `/tasks/${guid}/cancel`)!;
    expect(sent.method).toBe('POST');
    expect(sent.headers['x-api-key']).toBe(system.config.dispatcherApiKey);

    const report = { status: 'failed', exit_code: -1, result_key: '', result_metadata: { reason: 'cancelled' }, error_message: 'cancelled' };
    expect((await sendSigned(system, guid, 'callback', report, { token })).body.task_status).toBe('cancelled');
    expect((await sendSigned(system, guid, 'callback', report, { token })).body).toMatchObject({ task_status: 'cancelled', duplicate: true });
    const again = await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/cancel/`, { headers: auth });
    expect(again.status).toBe(409);
  });

  it('cancels a pending task at once, and answers 404 for an unknown one', async () => {
    const auth = { authorization: `Token ${system.apiToken}` };
    const pending = await createTask(system, { runtime_target: { type: 'nowhere' } });
    expect(pending.body.status).toBe('pending');
    const cancel = await http('POST', `${system.controllerUrl}/api/v1/tasks/${pending.body.guid}/cancel/`, { headers: auth });
    expect(cancel.body.status).toBe('cancelled');
    const unknown = await http('POST', `${system.controllerUrl}/api/v1/tasks/00000000-0000-4000-8000-000000000000/cancel/`, { headers: auth });
    expect(unknown.status).toBe(404);
  });

  it('times out a task whose dispatcher never calls back', async () => {
    const { guid, token } = await dispatchedTask({ timeout_seconds: 1 });
    const detail = await waitFor(async () => {
      const answer = await getTask(system, guid);
      return answer.body.status === 'timed_out' ? answer : undefined;
    }, 15_000, 'the watchdog');
    expect(detail.body.error_message).toMatch(/No callback came/);
    const late = await sendSigned(system, guid, 'callback', { status: 'completed', exit_code: 0 }, { token });
    expect(late.status).toBe(409);
  });
});

describe('task callbacks without CALLBACK_SIGNING_KEY', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { CALLBACK_SIGNING_KEY: '' } });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(system, { name: 'recorder', endpoint_url: dispatcher.url });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });

  it('accepts an unsigned callback carrying the task\'s token, and still refuses a wrong token', async () => {
    expect(system.config.callbackSigningKey).toBeNull();
    const created = await createDispatchedTask(system);
    const token = dispatcher.taskRequests[0].body.callback_token;
    expect((await sendSigned(system, created.body.guid, 'callback', { status: 'completed' }, { token: 'nope' })).status).toBe(401);
    const answer = await sendSigned(system, created.body.guid, 'callback', { status: 'completed', exit_code: 0 }, { token });
    expect(answer.status).toBe(200);
    expect(answer.body.task_status).toBe('completed');
  });
});
