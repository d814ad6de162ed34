import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { createTask, getTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { startTestSystem, TestSystem, testEnv } from '../harness/system';
import { waitFor } from '../harness/wait';

// The second dispatcher replica runs from dist/: `npm run build` first.
jest.setTimeout(90_000);

/**
 * `GET /api/v1/tasks/{guid}/logs/`: from the task's dispatcher while it runs, from object
 * storage once it is final, even when the dispatcher that ran it is gone.
 */
describe('task logs through the controller', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', storage: 's3' });
  });
  afterAll(async () => {
    await system?.close();
  });

  const logs = (guid: string, query = '') => http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/logs/${query}`, { headers: operator(system) });
  const completed = (guid: string) => waitFor(async () => (await getTask(system, guid)).body.status === 'completed', 40_000, `task ${guid} to complete`);

  it('serves a final task\'s output from object storage, with ?tail=N', async () => {
    const guid = (await createTask(system, { brief: { prompt: 'logs' } })).body.guid as string;
    await completed(guid);
    const all = await logs(guid);
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(all.text).toContain('completed with');
    const tail = await logs(guid, '?tail=1');
    expect(tail.text.trim().split('\n')).toEqual([all.text.trim().split('\n').at(-1)]);
  });

  it('follows a running task until it is final, then ends the stream', async () => {
    const guid = (await createTask(system, { agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '3' } })).body.guid as string;
    const response = await fetch(`${system.controllerUrl}/api/v1/tasks/${guid}/logs/?follow=true`, { headers: operator(system) });
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).toContain('sleeping 3 s');
    expect(body).toContain('completed');
    await completed(guid);
  });

  it('waits on a pending task that names a dispatcher which has not taken it', async () => {
    const guid = (await createTask(system, { dispatcher: 'not-there', brief: { prompt: 'held' } })).body.guid as string;
    const db = new Client({ connectionString: system.config.databaseUrl! });
    await db.connect();
    try {
      // Pending with a dispatcher named but not taken by it: as between a claim and the dispatcher's
      // answer, or between attempts (the last attempt's dispatcher, the next one an hour away).
      const named = await db.query(
        `UPDATE controller.tasks SET dispatcher_guid = (SELECT guid FROM controller.dispatchers ORDER BY created_at LIMIT 1),
           next_dispatch_at = now() + interval '1 hour' WHERE guid = $1 AND status = 'pending' RETURNING dispatcher_guid`,
        [guid],
      );
      expect(named.rows[0]?.dispatcher_guid).toEqual(expect.any(String));
    } finally {
      await db.end();
    }
    const now = await logs(guid);
    expect(now.status).toBe(200);
    expect(now.text).toBe('');
    const abort = new AbortController();
    const response = await fetch(`${system.controllerUrl}/api/v1/tasks/${guid}/logs/?follow=true`, { headers: operator(system), signal: abort.signal });
    expect(response.status).toBe(200);
    const first = response.body!.getReader().read().then((chunk) => (chunk.done ? 'ended' : 'output'), () => 'aborted');
    const seen = await Promise.race([first, sleep(2500).then(() => 'still waiting')]);
    abort.abort();
    expect(seen).toBe('still waiting');
  });

  it('serves the logs after the dispatcher that ran the task is gone', async () => {
    const env = await testEnv({ role: 'dispatcher', storage: 's3', databaseUrl: system.config.databaseUrl!, env: {
      DISPATCHER_NAME: 'short-lived', DISPATCHER_INSTANCE: 'short-lived', S3_BUCKET: system.config.s3!.bucket,
      CONTROLLER_URL: system.controllerUrl, CONTROLLER_TOKEN: system.apiToken, API_KEY: system.apiKey,
      AGENT_KEY: system.agentKey, CALLBACK_SIGNING_KEY: system.config.callbackSigningKey ?? undefined,
    } });
    const other = await new RoleProcess(env, `http://127.0.0.1:${env.DISPATCHER_PORT}/health`).start();
    const guid = (await createTask(system, { dispatcher: 'short-lived', brief: { prompt: 'gone' } })).body.guid as string;
    await completed(guid);
    await other.stop();
    const answer = await logs(guid);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('completed with');
  });

  it('serves the brief before and after the dispatch loop stores it', async () => {
    const brief = (guid: string) => http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/brief/`, { headers: operator(system) });
    const guid = (await createTask(system, { brief: { prompt: 'read me' } })).body.guid as string;
    const early = await brief(guid);
    expect(early.status).toBe(200);
    expect(early.body).toEqual({ prompt: 'read me' });
    await completed(guid);
    expect((await brief(guid)).body).toEqual({ prompt: 'read me' });
    const none = (await createTask(system, { brief: undefined })).body.guid as string;
    expect((await brief(none)).status).toBe(404);
  });

  it('answers 404 for an unknown task and 400 for a bad tail', async () => {
    expect((await logs(crypto.randomUUID())).status).toBe(404);
    expect((await logs(crypto.randomUUID(), '?follow=true')).status).toBe(404);
    const bad = await logs(crypto.randomUUID(), '?tail=-3');
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toHaveProperty('tail');
  });
});
