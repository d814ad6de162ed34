import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http } from '../harness/http';
import { sentStatements } from '../harness/pg-statements';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { RoleProcess } from '../harness/role-process';
import { startTestSystem, TestSystem, testEnv } from '../harness/system';

// The second replica runs from dist/: `npm run build` first.
jest.setTimeout(90_000);

/**
 * A final task's output is stored at `logs/<task_id>.txt` before its callback goes, and
 * served from there by any replica once the agent is gone; `?follow=true` streams it.
 */
describe('dispatcher task logs', () => {
  let first: TestSystem;
  let second: RoleProcess;
  let secondUrl: string;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    first = await startTestSystem({ role: 'dispatcher', storage: 's3', env: { DISPATCHER_INSTANCE: 'replica-a' } });
    const env = await testEnv({
      role: 'dispatcher',
      storage: 's3',
      databaseUrl: first.config.databaseUrl!,
      env: {
        DISPATCHER_INSTANCE: 'replica-b', API_KEY: first.apiKey, AGENT_KEY: first.agentKey,
        S3_BUCKET: first.config.s3!.bucket, CALLBACK_SIGNING_KEY: first.config.callbackSigningKey ?? undefined,
      },
    });
    secondUrl = `http://127.0.0.1:${env.DISPATCHER_PORT}`;
    second = await new RoleProcess(env, `${secondUrl}/health`).start();
  });
  afterAll(async () => {
    await second?.stop();
    await first?.close();
    await receiver?.close();
  });

  const submit = async (overrides: Record<string, unknown>) => {
    const request = makeTaskRequest({ brief_key: '', ...overrides });
    request.callback_url = receiver.callbackUrl(request.task_id);
    expect((await taskApi(first).create(request)).status).toBe(201);
    return request.task_id as string;
  };

  it('stores the output before the callback, and another replica serves it after the agent is gone', async () => {
    const sent = sentStatements();
    let callback: { at: number };
    let taskId: string;
    try {
      taskId = await submit({ agent_image: 'agent-examples/echo' });
      callback = await waitFor(() => receiver.callbacks().find((request) => request.path.includes(taskId)), 30_000, 'the callback');
    } finally {
      sent.stop();
    }
    const sentAt = callback.at;
    // The agent's removal follows the task's final move, which told the store the status: no read of it.
    expect(sent.texts.filter((text) => /SELECT status FROM "dispatcher"\."tasks"/.test(text))).toEqual([]);
    expect(sent.texts.filter((text) => text.includes('logs_stored_at = now()'))).toHaveLength(1);

    const stored = await createObjectStorage(first.config).stat(`logs/${taskId}.txt`);
    expect(stored).not.toBeNull();
    expect(stored!.lastModified.getTime()).toBeLessThanOrEqual(sentAt + 1000);
    const text = (await readAll((await createObjectStorage(first.config).get(`logs/${taskId}.txt`))!)).toString('utf8');
    expect(text).toContain('completed with');

    const fromOther = await http('GET', `${secondUrl}/tasks/${taskId}/logs`, { headers: { 'X-API-Key': first.apiKey } });
    expect(fromOther.status).toBe(200);
    expect(fromOther.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(fromOther.text).toBe(text);
    const tail = await http('GET', `${secondUrl}/tasks/${taskId}/logs?tail=1`, { headers: { 'X-API-Key': first.apiKey } });
    expect(tail.text.trim().split('\n')).toHaveLength(1);
    expect(tail.text).toContain('completed with');
  });

  it('follows a running task until it is final, then ends the stream with the lines its agent writes after checking back', async () => {
    // The agent's last line comes 1.5 s after its check-back, when the task is already final.
    const taskId = await submit({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '3', LINGER_MS: '1500' } });
    await waitForStatus(first, taskId, ['running'], 20_000);
    const started = Date.now();
    const response = await fetch(`${first.dispatcherUrl}/tasks/${taskId}/logs?follow=true`, { headers: { 'X-API-Key': first.apiKey } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const body = await response.text();
    expect(body).toContain('sleeping 3 s');
    expect(body).toContain('completed');
    expect(Date.now() - started).toBeGreaterThan(1000);
    expect((await taskApi(first).get(taskId)).body.data.status).toBe('completed');
  });

  it('lets an agent tidy up after its check-back for its exit grace: the stray sweep (every 4 s) does not stop it', async () => {
    // Five seconds of tidy-up, past the sweep's interval, then its last line and a clean exit.
    const taskId = await submit({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '1', LINGER_MS: '5000' } });
    await waitForStatus(first, taskId, ['completed'], 20_000);
    const output = await waitFor(async () => {
      const logs = await http('GET', `${first.dispatcherUrl}/tasks/${taskId}/logs`, { headers: { 'X-API-Key': first.apiKey } });
      return logs.text.includes('[sleep] completed') || logs.text.includes('SIGTERM') ? logs.text : null;
    }, 15_000, "the agent's last line");
    expect(output).toContain('[sleep] completed');
    expect(output).not.toContain('SIGTERM');
  });

  it('refuses a follow flag that is not a boolean, and an unknown task', async () => {
    const headers = { 'X-API-Key': first.apiKey };
    const bad = await http('GET', `${first.dispatcherUrl}/tasks/${crypto.randomUUID()}/logs?follow=maybe`, { headers });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.error)).toContain('follow');
    const missing = await http('GET', `${first.dispatcherUrl}/tasks/${crypto.randomUUID()}/logs?follow=true`, { headers });
    expect(missing.status).toBe(404);
  });
});
