import { DataSource } from 'typeorm';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { controllerDatabase, insertDispatcher, makeTaskRow, repositoryOn, retriesOn } from './controller-tasks';

describe('TasksRepository on PostgreSQL', () => {
  let sources: DataSource[];
  let close: () => Promise<void>;
  let tasks: TasksRepository;
  let replica: TasksRepository;

  beforeAll(async () => {
    ({ sources, close } = await controllerDatabase(2));
    [tasks, replica] = sources.map(repositoryOn);
  });
  afterAll(() => close());

  it('stores a task in one INSERT and reads it back as the entity', async () => {
    const stored = await tasks.insert(makeTaskRow({ env: { A: '1' } }));
    expect(stored).toMatchObject({ status: 'pending', env: { A: '1' }, dispatchAttempts: 0 });
    expect(stored.createdAt).toBeInstanceOf(Date);
    // The inline brief is kept for the dispatch loop, not sent back with the new row.
    expect(stored.briefPending).toBeUndefined();
    const [kept] = await sources[0].query('SELECT brief_pending FROM "controller"."tasks" WHERE guid = $1', [stored.guid]);
    expect(kept.brief_pending).toBe('{"prompt":"hello"}');
    const read = await tasks.findByGuid(stored.guid);
    expect(read).toMatchObject({ guid: stored.guid, runtimeTarget: { type: 'local', namespace: '' } });
    // Lists and reads never carry the inline brief.
    expect(read!.briefPending).toBeUndefined();
  });

  it('moves a task only along the state machine, and answers a refused move with the task as it is', async () => {
    const { guid } = await tasks.insert(makeTaskRow());
    const dispatched = await tasks.transition(guid, 'dispatched', { dispatchedAt: () => 'now()' });
    expect(dispatched).toMatchObject({ moved: true, task: { status: 'dispatched' } });
    expect(dispatched.task!.dispatchedAt).toBeInstanceOf(Date);

    const completed = await tasks.transition(guid, 'completed', { exitCode: 0 });
    expect(completed).toMatchObject({ moved: true, task: { status: 'completed', exitCode: 0 } });
    expect(completed.task!.finishedAt).toBeInstanceOf(Date);

    for (const to of ['running', 'failed', 'dispatched'] as const) {
      const refused = await tasks.transition(guid, to);
      expect(refused).toMatchObject({ moved: false, task: { status: 'completed', exitCode: 0 } });
    }
    expect(await tasks.transition('00000000-0000-4000-8000-000000000000', 'failed')).toEqual({ moved: false, task: null });
  });

  it('keeps progress on a running task with `stay`, and narrows the sources with `from`', async () => {
    const { guid } = await tasks.insert(makeTaskRow());
    const progress = { percentage: 10, message: 'reading', data: null, updated_at: new Date().toISOString() };
    const first = await tasks.transition(guid, 'running', { progress, startedAt: () => 'COALESCE(started_at, now())' }, { stay: true });
    expect(first).toMatchObject({ moved: true, task: { status: 'running', progress } });
    const later = { ...progress, percentage: 60 };
    const second = await tasks.transition(guid, 'running', { progress: later, startedAt: () => 'COALESCE(started_at, now())' }, { stay: true });
    expect(second.task).toMatchObject({ progress: later, startedAt: first.task!.startedAt });
    expect((await tasks.transition(guid, 'running', { progress })).moved).toBe(false);
    expect((await tasks.transition(guid, 'cancelled', {}, { from: ['pending'] })).moved).toBe(false);
  });

  it('lets exactly one of two replicas close a task when they race', async () => {
    for (let round = 0; round < 10; round++) {
      const { guid } = await tasks.insert(makeTaskRow({ status: 'running' }));
      const [a, b] = await Promise.all([tasks.transition(guid, 'completed'), replica.transition(guid, 'failed')]);
      expect([a.moved, b.moved].filter(Boolean)).toHaveLength(1);
      const winner = a.moved ? 'completed' : 'failed';
      // The loser is told what the task became, not what it was when it started.
      expect((a.moved ? b : a).task!.status).toBe(winner);
    }
  });

  it('hands each pending task to one replica when both claim at once, oldest first', async () => {
    const stored = [];
    for (let i = 0; i < 12; i++) stored.push(await tasks.insert(makeTaskRow({ agentImage: 'claim-race' })));
    const [mine, theirs] = await Promise.all([tasks.claimPending(8, 60), replica.claimPending(8, 60)]);
    const claimed = [...mine, ...theirs].filter((task) => task.agentImage === 'claim-race').map((task) => task.guid);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.sort()).toEqual(stored.map((task) => task.guid).sort());
    expect(mine.map((task) => task.createdAt.getTime())).toEqual([...mine].map((task) => task.createdAt.getTime()).sort((x, y) => x - y));
    // Claimed tasks are not claimed again until released.
    expect((await tasks.claimPending(50, 60)).filter((task) => task.agentImage === 'claim-race')).toEqual([]);
    await tasks.releaseClaims(claimed);
    expect((await replica.claimPending(50, 60)).filter((task) => task.agentImage === 'claim-race')).toHaveLength(12);
    await replica.releaseClaims(claimed);
  });

  it('defers tasks that found no dispatcher, with the reason, until their retry time', async () => {
    const { guid } = await tasks.insert(makeTaskRow({ agentImage: 'deferred' }));
    expect((await tasks.claimPending(100, 60)).map((task) => task.guid)).toContain(guid);
    // The deferral ends the claim itself (no release statement after it) and says so.
    expect([...(await tasks.deferPending(new Map([[guid, 'no dispatcher']]), 3600, new Set([guid])))]).toEqual([guid]);
    expect((await tasks.claimPending(100, 60)).map((task) => task.guid)).not.toContain(guid);
    const after = await sources[0].query(`SELECT last_dispatch_error, brief_pending, dispatch_claimed_until FROM "controller"."tasks" WHERE guid = $1`, [guid]);
    expect(after).toEqual([{ last_dispatch_error: 'no dispatcher', brief_pending: null, dispatch_claimed_until: null }]);
  });

  it('leaves a task that is no longer pending out of a deferral, its claim for the caller to release', async () => {
    const { guid } = await tasks.insert(makeTaskRow({ agentImage: 'deferred-gone' }));
    expect((await tasks.claimPending(100, 60)).map((task) => task.guid)).toContain(guid);
    await tasks.transition(guid, 'cancelled');
    expect([...(await tasks.deferPending(new Map([[guid, 'no dispatcher']]), 3600, new Set([guid])))]).toEqual([]);
    const [row] = await sources[0].query(`SELECT status, last_dispatch_error, dispatch_claimed_until IS NOT NULL AS claimed FROM "controller"."tasks" WHERE guid = $1`, [guid]);
    expect(row).toEqual({ status: 'cancelled', last_dispatch_error: null, claimed: true });
    await tasks.releaseClaims([guid]);
  });

  it('assigns only tasks that are still pending', async () => {
    const dispatcherGuid = await insertDispatcher(sources[0], 'counted');
    const open = await tasks.insert(makeTaskRow());
    const gone = await tasks.insert(makeTaskRow());
    await tasks.transition(gone.guid, 'cancelled');
    const assigned = await tasks.assign([open, gone].map((task) => ({ guid: task.guid, dispatcherGuid, dispatcherSlug: 'counted', callbackTokenHash: 'ab' })));
    expect([...assigned]).toEqual([open.guid]);
    await tasks.transitionMany([open.guid, gone.guid], 'dispatched');
    expect(await tasks.findByGuid(open.guid)).toMatchObject({ dispatcherSlug: 'counted', dispatchAttempts: 1, callbackTokenHash: 'ab' });
  });

  it('times out the silent tasks past deadline and grace, and no others (the watchdog)', async () => {
    const noRetry = { retry: { max_attempts: 1, backoff_seconds: 1, max_backoff_seconds: 1, on: ['infra' as const] } };
    const overdue = await tasks.insert(makeTaskRow({ status: 'running', ...noRetry }));
    const inGrace = await tasks.insert(makeTaskRow({ status: 'dispatched', ...noRetry }));
    const closed = await tasks.insert(makeTaskRow({ status: 'completed', ...noRetry }));
    await sources[0].query(`UPDATE "controller"."tasks" SET deadline_at = now() - interval '2 minutes' WHERE guid = ANY($1)`, [[overdue.guid, closed.guid]]);
    await sources[0].query(`UPDATE "controller"."tasks" SET deadline_at = now() - interval '10 seconds' WHERE guid = $1`, [inGrace.guid]);
    const [watchdog, replicaWatchdog] = sources.map(retriesOn);
    const [first, second] = await Promise.all([watchdog.timeOutOverdue(60, 'silent'), replicaWatchdog.timeOutOverdue(60, 'silent')]);
    const timedOut = [...first, ...second].map((outcome) => outcome.task!.guid);
    expect(timedOut).toEqual([overdue.guid]);
    expect(await tasks.findByGuid(overdue.guid)).toMatchObject({ status: 'timed_out', errorMessage: 'silent', deadLetter: true });
    expect((await tasks.findByGuid(inGrace.guid))!.status).toBe('dispatched');
    expect((await tasks.findByGuid(closed.guid))!.status).toBe('completed');
  });

  it('tries a silent task again when its policy retries time-outs, once across two racing watchdogs', async () => {
    const retried = await tasks.insert(makeTaskRow({ status: 'dispatched', retry: { max_attempts: 2, backoff_seconds: 1, max_backoff_seconds: 1, on: ['timed_out'] } }));
    await sources[0].query(`UPDATE "controller"."tasks" SET deadline_at = now() - interval '2 minutes', callback_token_hash = 'first' WHERE guid = $1`, [retried.guid]);
    const [watchdog, replicaWatchdog] = sources.map(retriesOn);
    const [first, second] = await Promise.all([watchdog.timeOutOverdue(60, 'silent'), replicaWatchdog.timeOutOverdue(60, 'silent')]);
    expect([...first, ...second].map((outcome) => [outcome.task!.guid, outcome.retried])).toEqual([[retried.guid, true]]);
    const pending = (await tasks.findByGuid(retried.guid))!;
    expect(pending).toMatchObject({ status: 'pending', attempt: 2, callbackTokenHash: null, deadLetter: false, deadlineAt: null });
    expect(pending.dispatcherTaskId).not.toBe(retried.guid);
    expect(pending.nextDispatchAt!.getTime() - Date.now()).toBeLessThanOrEqual(1000);
    const [ended] = await sources[0].query(`SELECT attempt, status, reason, dispatcher_task_id, callback_token_hash FROM "controller"."task_attempts" WHERE task_guid = $1`, [retried.guid]);
    expect(ended).toEqual({ attempt: 1, status: 'timed_out', reason: 'timed_out', dispatcher_task_id: retried.guid, callback_token_hash: 'first' });
    const [event] = await sources[0].query(`SELECT data FROM "controller"."events" WHERE task_guid = $1 AND kind = 'task.retrying'`, [retried.guid]);
    expect(event.data).toMatchObject({ task_guid: retried.guid, attempt: 2, reason: 'timed_out', status: 'pending', updated_at: expect.any(String) });
  });

  it('records a dispatch only for the attempt that was sent, not for the next one a fast failure started', async () => {
    const sent = await tasks.insert(makeTaskRow());
    const overtaken = await tasks.insert(makeTaskRow());
    await sources[0].query(`UPDATE "controller"."tasks" SET attempt = 2 WHERE guid = $1`, [overtaken.guid]);
    const moved = await tasks.transitionMany([sent.guid, overtaken.guid], 'dispatched', {}, [1, 1]);
    expect(moved.map((task) => task.guid)).toEqual([sent.guid]);
    expect((await tasks.findByGuid(overtaken.guid))!.status).toBe('pending');
  });

  it('reads back only the properties a move of many asks for, and moves the whole row', async () => {
    const task = await tasks.insert(makeTaskRow());
    const [moved] = await tasks.transitionMany([task.guid], 'dispatched', { dispatchedAt: () => 'now()' }, [1], ['guid', 'createdAt', 'dispatchedAt']);
    expect(Object.entries(moved).filter(([, value]) => value !== undefined).map(([property]) => property).sort()).toEqual(['createdAt', 'dispatchedAt', 'guid']);
    expect(moved.dispatchedAt).toBeInstanceOf(Date);
    expect(moved.createdAt.getTime()).toBe(task.createdAt.getTime());
    const stored = (await tasks.findByGuid(task.guid))!;
    expect(stored).toMatchObject({ status: 'dispatched', agentImage: task.agentImage, dispatchedAt: moved.dispatchedAt });
  });

  it('tells pending tasks without a reason why they wait, from a point in time, and nothing else', async () => {
    const old = await tasks.insert(makeTaskRow());
    // The database stamps microseconds and a Date holds milliseconds: keep the point in time clear of both inserts.
    const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
    await pause();
    const since = new Date();
    await pause();
    const fresh = await tasks.insert(makeTaskRow());
    const explained = await tasks.insert(makeTaskRow({ lastDispatchError: 'another reason' }));
    const running = await tasks.insert(makeTaskRow({ status: 'running' }));
    await tasks.noteWaiting('nobody home', since);
    expect((await tasks.findByGuid(fresh.guid))!.lastDispatchError).toBe('nobody home');
    expect((await tasks.findByGuid(old.guid))!.lastDispatchError).toBeNull();
    expect((await tasks.findByGuid(explained.guid))!.lastDispatchError).toBe('another reason');
    expect((await tasks.findByGuid(running.guid))!.lastDispatchError).toBeNull();
    await replica.noteWaiting('nobody home', null);
    expect((await tasks.findByGuid(old.guid))!.lastDispatchError).toBe('nobody home');
    expect((await tasks.findByGuid(old.guid))!.status).toBe('pending');
  });
});
