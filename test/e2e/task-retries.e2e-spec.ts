import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clientBearer, createTask, getTask, operator } from '../harness/controller-tasks';
import { openEventStream } from '../harness/events';
import { http } from '../harness/http';
import { scrape } from '../harness/metrics';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

const RETRY = { max_attempts: 3, backoff_seconds: 1, max_backoff_seconds: 60, on: ['infra'] };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Retries through both real roles: an agent whose command does not exist fails to start on
 * the real dispatcher, the controller tries it again on fresh dispatcher task ids with a
 * growing backoff, gives up after the last attempt (a dead letter), and a re-run made once
 * the command exists runs to completion.
 */
describe('a task whose agent cannot start', () => {
  let system: TestSystem;
  const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flaky-agent-'));
  const agentCommand = path.join(agentDir, 'agent');
  const tasksUrl = () => `${system.controllerUrl}/api/v1/tasks`;

  beforeAll(async () => {
    system = await startTestSystem({ env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/flaky': agentCommand }), TASK_DISPATCH_RETRY_SECONDS: '1' } });
    await waitFor(async () => (await http('GET', `${system.controllerUrl}/api/v1/dispatchers/local/`, { headers: operator(system) })).body?.state === 'online',
      15_000, 'the dispatcher to register');
  });
  afterAll(async () => {
    await system?.close();
    fs.rmSync(agentDir, { recursive: true, force: true });
  });

  it('is tried twice more with a growing backoff ceiling, then dead-lettered, then re-run once it can start', async () => {
    const retriesBefore = (await scrape(system.controllerUrl)).value('controller_task_retries_total{reason="infra"}') ?? 0;
    const events = await openEventStream(`${system.controllerUrl}/api/v1/events/`, operator(system));
    const created = await createTask(system, { agent_image: 'test/flaky', timeout_seconds: 60, retry: RETRY });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'pending', attempt: 1, max_attempts: 3, retry: RETRY, dead_letter: false, rerun_of: null, reruns: [] });
    const guid = created.body.guid;

    const failed = await waitFor(async () => {
      const task = await getTask(system, guid);
      return task.body.status === 'failed' ? task : null;
    }, 30_000, 'the last attempt to fail');
    await events.close();
    expect(failed.body).toMatchObject({ status: 'failed', attempt: 3, dead_letter: true, next_attempt_at: null });
    const attempts = failed.body.attempts;
    expect(attempts.map((a: any) => [a.attempt, a.dispatcher, a.status, a.reason])).toEqual([
      [1, 'local', 'failed', 'infra'], [2, 'local', 'failed', 'infra'], [3, 'local', 'failed', null],
    ]);
    for (const attempt of attempts) expect(attempt.error_message).toMatch(/^The agent could not be started: (Error: )?spawn .*agent ENOENT/);
    // Attempt 1 is the task's guid on the dispatcher; each later attempt has a fresh task id.
    expect(attempts[0].dispatcher_task_id).toBe(guid);
    expect(attempts[1].dispatcher_task_id).toMatch(UUID);
    expect(new Set(attempts.map((a: any) => a.dispatcher_task_id)).size).toBe(3);

    // Full jitter: each wait is anywhere below its ceiling, and the ceiling doubles (1 s, then 2 s).
    const retrying = events.of(guid).filter((event) => event.event === 'task.retrying').map((event) => event.data);
    expect(retrying.map((data) => [data.attempt, data.reason, data.status])).toEqual([[2, 'infra', 'pending'], [3, 'infra', 'pending']]);
    const waits = retrying.map((data) => (Date.parse(data.next_attempt_at) - Date.parse(data.at)) / 1000);
    expect(waits[0]).toBeGreaterThanOrEqual(-0.05);
    expect(waits[0]).toBeLessThanOrEqual(1.05);
    expect(waits[1]).toBeLessThanOrEqual(2.05);
    // No attempt left before its backoff ended.
    expect(Date.parse(attempts[1].started_at)).toBeGreaterThanOrEqual(Date.parse(retrying[0].next_attempt_at) - 5);
    expect(Date.parse(attempts[2].started_at)).toBeGreaterThanOrEqual(Date.parse(retrying[1].next_attempt_at) - 5);
    expect(events.of(guid).filter((event) => event.event === 'task.finished')).toHaveLength(1);
    expect((await scrape(system.controllerUrl)).value('controller_task_retries_total{reason="infra"}')).toBe(retriesBefore + 2);

    const deadLetters = await http('GET', `${tasksUrl()}/?dead_letter=true&limit=50`, { headers: operator(system) });
    expect(deadLetters.status).toBe(200);
    expect(deadLetters.body.results.map((task: any) => task.guid)).toContain(guid);
    expect(deadLetters.body.results.every((task: any) => task.dead_letter && ['failed', 'timed_out'].includes(task.status))).toBe(true);

    // The operator fixes what kept it from starting, and re-runs it.
    fs.writeFileSync(agentCommand, `#!/bin/sh\nexec "${process.execPath}" dist/src/examples/echo.js\n`, { mode: 0o755 });
    const rerun = await http('POST', `${tasksUrl()}/${guid}/rerun/`, { headers: operator(system) });
    expect(rerun.status).toBe(201);
    expect(rerun.body).toMatchObject({ status: 'pending', attempt: 1, rerun_of: guid, reruns: [], dead_letter: false, agent_image: 'test/flaky', retry: RETRY });
    expect(rerun.body.guid).not.toBe(guid);
    const brief = await http('GET', `${tasksUrl()}/${rerun.body.guid}/brief/`, { headers: operator(system) });
    expect(brief.body).toEqual({ prompt: 'say hello' });

    const original = await getTask(system, guid);
    expect(original.body).toMatchObject({ status: 'failed', dead_letter: false, reruns: [rerun.body.guid] });
    const afterRerun = await http('GET', `${tasksUrl()}/?dead_letter=true&limit=50`, { headers: operator(system) });
    expect(afterRerun.body.results.map((task: any) => task.guid)).not.toContain(guid);

    const completed = await waitFor(async () => {
      const task = await getTask(system, rerun.body.guid);
      return ['completed', 'failed'].includes(task.body.status) ? task : null;
    }, 30_000, 'the re-run to finish');
    expect(completed.body).toMatchObject({ status: 'completed', attempt: 1, rerun_of: guid });
    expect(completed.body.attempts).toHaveLength(1);
  });

  it('re-runs only a final task, for a writer only', async () => {
    const open = await createTask(system, { agent_image: 'test/flaky', retry: { ...RETRY, backoff_seconds: 3600 } });
    const refused = await http('POST', `${tasksUrl()}/${open.body.guid}/rerun/`, { headers: operator(system) });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'conflict' });
    expect((await http('POST', `${tasksUrl()}/00000000-0000-4000-8000-000000000000/rerun/`, { headers: operator(system) })).status).toBe(404);
    const reader = await clientBearer(system, ['tasks:read']);
    expect((await http('POST', `${tasksUrl()}/${open.body.guid}/rerun/`, { headers: reader })).status).toBe(403);
    expect((await http('GET', `${tasksUrl()}/?dead_letter=maybe`, { headers: reader })).status).toBe(400);
    await http('POST', `${tasksUrl()}/${open.body.guid}/cancel/`, { headers: operator(system) });
  });
});
