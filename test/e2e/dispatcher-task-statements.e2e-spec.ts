import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { migrateRole } from '../../src/bootstrap';
import { callbackBody } from '../../src/dispatcher/callbacks/callback-body';
import { CallbackOutboxEntity } from '../../src/dispatcher/callbacks/callback-outbox.entity';
import { DISPATCHER_ENTITIES } from '../../src/dispatcher/entities';
import { TaskEntity } from '../../src/dispatcher/tasks/task.entity';
import { TasksRepository } from '../../src/dispatcher/tasks/tasks.repository';
import { loadConfig } from '../../src/shared/config/config';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { sentStatements } from '../harness/pg-statements';
import { testEnv } from '../harness/system';

/**
 * Every SQL statement sent while `work` runs, in order, as `pg` sends it: through TypeORM
 * or as a prepared statement on its pool alike.
 */
const log = {
  async during(work: () => Promise<unknown>): Promise<string[]> {
    const sent = sentStatements();
    try {
      await work();
    } finally {
      sent.stop();
    }
    return sent.texts;
  },
};

// What the start path costs in statements, and that the rows it gives back are the stored ones.
describe('the tasks repository on the start path, against PostgreSQL', () => {
  let db: DataSource;
  let tasks: TasksRepository;

  beforeAll(async () => {
    const config = loadConfig(await testEnv({ role: 'dispatcher' }));
    await migrateRole('dispatcher', config);
    const options = roleDataSourceOptions('dispatcher', { url: config.databaseUrl!, poolSize: 2, migrationsRun: false }, { entities: DISPATCHER_ENTITIES, migrations: [] });
    db = await new DataSource(options).initialize();
    tasks = new TasksRepository(db);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  const makeTask = (overrides: Partial<TaskEntity> = {}): Partial<TaskEntity> => ({
    taskId: randomUUID(), agentImage: 'agent-examples/echo', runtimeType: 'local', runtimeNamespace: '', resources: { cpu: '1', memory: '1Gi' },
    env: { GREETING: 'hello' }, ports: [{ container_port: 8080, protocol: 'tcp' }], briefKey: '', callbackUrl: 'http://127.0.0.1:9/cb',
    callbackTokenSealed: 'v1.x', timeoutSeconds: 60, requestDigest: 'digest-1', status: 'pending', ...overrides,
  });

  it('stores a new task in one statement and gives back the row as a find reads it', async () => {
    const task = makeTask();
    let created: TaskEntity | null = null;
    const statements = await log.during(async () => (created = await tasks.insertIfAbsent(task)));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/^INSERT INTO .* ON CONFLICT \(task_id\) DO NOTHING RETURNING /s);
    expect(created).toEqual(await tasks.findById(task.taskId!));
    expect(created!.createdAt).toBeInstanceOf(Date);
    expect(created!).toMatchObject({ status: 'pending', env: { GREETING: 'hello' }, ports: [{ container_port: 8080, protocol: 'tcp' }], exitCode: null });
  });

  it('gives null for a task id that exists, leaving the stored task as it was', async () => {
    const task = makeTask();
    await tasks.insertIfAbsent(task);
    expect(await tasks.insertIfAbsent({ ...task, requestDigest: 'digest-2', agentImage: 'other' })).toBeNull();
    expect(await tasks.findById(task.taskId!)).toMatchObject({ requestDigest: 'digest-1', agentImage: 'agent-examples/echo' });
  });

  it('moves a task to a live state in one statement and gives back the moved row', async () => {
    const task = makeTask({ status: 'starting' });
    await tasks.insertIfAbsent(task);
    let moved: TaskEntity | null = null;
    const statements = await log.during(async () => (moved = await tasks.transition(task.taskId!, 'running')));
    expect(statements).toHaveLength(1);
    expect(moved).toEqual(await tasks.findById(task.taskId!));
    expect(moved!.status).toBe('running');
    expect(await tasks.transition(task.taskId!, 'running')).toBeNull();
  });

  it('checks an agent in with one statement that reads back only what the check-in answers, the values the stored row holds', async () => {
    const task = makeTask({ status: 'starting', skills: [{ slug: 'lint', version_number: 2, content_hash: 'a'.repeat(64), storage_ref: 'skills/lint/2.zip' }] });
    await tasks.insertIfAbsent(task);
    let checkedIn: Awaited<ReturnType<TasksRepository['checkIn']>> = null;
    const statements = await log.during(async () => (checkedIn = await tasks.checkIn(task.taskId!)));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/RETURNING "task_id", "status", "brief_key", "env", "skills", "runtime_backend", "runtime_type", "created_at"$/);
    const stored = (await tasks.findById(task.taskId!))!;
    expect(stored.status).toBe('running');
    expect(Object.fromEntries(Object.entries(checkedIn!).filter(([, value]) => value !== undefined))).toEqual({
      taskId: stored.taskId, status: 'running', briefKey: stored.briefKey, env: stored.env, skills: stored.skills,
      runtimeBackend: stored.runtimeBackend, runtimeType: stored.runtimeType, createdAt: stored.createdAt,
    });
    expect(await tasks.checkIn(task.taskId!)).toBeNull();
  });

  it('moves a task to a final state with its callback in one transaction', async () => {
    const task = makeTask({ status: 'running' });
    await tasks.insertIfAbsent(task);
    const finished = await tasks.transition(task.taskId!, 'completed', { exitCode: 0, resultKey: 'results/x/r.json' });
    expect(finished).toMatchObject({ status: 'completed', exitCode: 0, resultKey: 'results/x/r.json', finishedAt: expect.any(Date) });
    const outbox = await db.getRepository(CallbackOutboxEntity).findOneByOrFail({ taskId: task.taskId! });
    expect(JSON.parse(outbox.body)).toMatchObject({ status: 'completed', exit_code: 0, result_key: 'results/x/r.json' });
  });

  it('moves a checked-back task to its final state and writes its callback in one statement, the body the stored row makes', async () => {
    const task = makeTask({ status: 'running' });
    await tasks.insertIfAbsent(task);
    const patch = { exitCode: 1, resultKey: '', resultMetadata: { zeta: 1, id: 'r-1', nested: { bb: [{ yy: 2, x: 1 }], a: null }, é: 'ü' }, errorMessage: 'It broke.' };
    let finished: TaskEntity | null = null;
    const statements = await log.during(async () => (finished = await tasks.transition(task.taskId!, 'failed', patch)));
    expect(statements).toHaveLength(1);
    const stored = (await tasks.findById(task.taskId!))!;
    expect(finished).toEqual(stored);
    expect(stored).toMatchObject({ status: 'failed', exitCode: 1, errorMessage: 'It broke.', resultMetadata: patch.resultMetadata, finishedAt: expect.any(Date) });
    const outbox = await db.getRepository(CallbackOutboxEntity).findOneByOrFail({ taskId: task.taskId! });
    // Byte for byte what the row read back gives (jsonb's key order), as a transaction's insert wrote it.
    expect(outbox.body).toBe(callbackBody(stored));
    expect(outbox).toMatchObject({ state: 'pending', attempts: 0 });

    // A lost race moves nothing and queues nothing more.
    expect(await tasks.transition(task.taskId!, 'completed', { ...patch, exitCode: 0, errorMessage: null })).toBeNull();
    expect(await db.getRepository(CallbackOutboxEntity).countBy({ taskId: task.taskId! })).toBe(1);
    expect((await tasks.findById(task.taskId!))!.status).toBe('failed');
  });

  it('tells with a check-back\'s final move whether a pending task waits for the slot it frees, in the same one statement', async () => {
    await db.query(`UPDATE "dispatcher"."tasks" SET status = 'failed' WHERE status IN ('pending', 'starting', 'running')`);
    const outcome = { exitCode: 0, resultKey: null, resultMetadata: {}, errorMessage: null };
    const alone = makeTask({ status: 'running' });
    await tasks.insertIfAbsent(alone);
    let checkedBack: Awaited<ReturnType<TasksRepository['checkBack']>> = null;
    const statements = await log.during(async () => (checkedBack = await tasks.checkBack(alone.taskId!, 'completed', outcome)));
    expect(statements).toHaveLength(1);
    expect(checkedBack).toEqual({ task: await tasks.findById(alone.taskId!), pendingWaits: false });
    expect(await db.getRepository(CallbackOutboxEntity).countBy({ taskId: alone.taskId! })).toBe(1);

    const running = makeTask({ status: 'running' });
    await tasks.insertIfAbsent(running);
    await tasks.insertIfAbsent(makeTask());
    expect(await tasks.checkBack(running.taskId!, 'failed', { ...outcome, exitCode: 1, errorMessage: 'It broke.' })).toMatchObject({ task: { status: 'failed' }, pendingWaits: true });
    // A second check-back finds the task final: nothing moves.
    expect(await tasks.checkBack(running.taskId!, 'completed', outcome)).toBeNull();
  });

  it('claims whole rows in arrival order and records the runtime ref in one statement that tells the status', async () => {
    await db.query(`UPDATE "dispatcher"."tasks" SET status = 'failed' WHERE status IN ('pending', 'starting', 'running')`);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await tasks.insertIfAbsent(makeTask()))!.taskId);
    const claimed = await tasks.claimPending(2);
    expect(claimed.map((task) => task.taskId)).toEqual(ids.slice(0, 2));
    expect(claimed[0]).toEqual(await tasks.findById(ids[0]));
    expect(claimed[0]).toMatchObject({ status: 'starting', runtimeBackend: 'local', startedAt: expect.any(Date), deadlineAt: expect.any(Date) });
    expect(await tasks.claimPending(2)).toEqual([]);

    let status: string | null = null;
    const statements = await log.during(async () => (status = await tasks.setRuntimeRef(ids[0], '4242', 'replica-a')));
    expect(statements).toHaveLength(1);
    expect(status).toBe('starting');
    expect(await tasks.findById(ids[0])).toMatchObject({ runtimeRef: '4242', runtimeOwner: 'replica-a' });
    await tasks.transition(ids[1], 'cancelled');
    expect(await tasks.setRuntimeRef(ids[1], '4343', 'replica-a')).toBe('cancelled');
    expect(await tasks.setRuntimeRef(randomUUID(), '1', 'replica-a')).toBeNull();
  });

  it('stores a task and claims what the capacity allows in one round trip, the oldest waiting task first, answering the row as accepted', async () => {
    await db.query(`UPDATE "dispatcher"."tasks" SET status = 'failed' WHERE status IN ('pending', 'starting', 'running')`);
    // A free slot: the new task is claimed with its insert.
    const first = makeTask();
    let stored: Awaited<ReturnType<TasksRepository['insertAndClaim']>> | null = null;
    const statements = await log.during(async () => (stored = await tasks.insertAndClaim(first, 2, 'replica-a')));
    expect(statements).toHaveLength(1);
    // The row as accepted, and the same row as the claim left it.
    expect(stored!.created).toMatchObject({ taskId: first.taskId, status: 'pending', startedAt: null });
    expect(stored!.claimed).toEqual([await tasks.findById(first.taskId!)]);
    expect(stored!.claimed[0]).toMatchObject({ status: 'starting', claimedBy: 'replica-a', startedAt: expect.any(Date), deadlineAt: expect.any(Date) });

    // An older task left pending (stored while no start round claimed) goes first; the capacity holds.
    const older = (await tasks.insertIfAbsent(makeTask()))!;
    const second = makeTask();
    const both = await tasks.insertAndClaim(second, 2, 'replica-a');
    expect(both.claimed.map((task) => task.taskId)).toEqual([older.taskId]);
    expect(both.created).toMatchObject({ taskId: second.taskId, status: 'pending', startedAt: null });

    // Full: nothing is claimed, the task waits; the same id again stores nothing.
    const third = await tasks.insertAndClaim(makeTask(), 2, 'replica-a');
    expect(third).toMatchObject({ created: { status: 'pending' }, claimed: [] });
    expect(await tasks.insertAndClaim({ ...second, requestDigest: 'digest-2' }, 2, 'replica-a')).toEqual({ created: null, claimed: [] });
    expect(await tasks.findById(second.taskId!)).toMatchObject({ status: 'pending', requestDigest: 'digest-1' });
  });

  it('answers the scheduler tick\'s questions in one statement, and reads whole rows only for the tasks it found', async () => {
    await db.query(`UPDATE "dispatcher"."tasks" SET status = 'failed' WHERE status IN ('pending', 'starting', 'running')`);
    await db.query(`UPDATE "dispatcher"."callback_outbox" SET state = 'delivered' WHERE state = 'pending'`);
    const quiet = await log.during(async () => expect(await tasks.tickProbe(2, ['kubernetes'])).toEqual({ claimable: false, overdue: [], unwatched: false, callbacksDue: false }));
    expect(quiet).toHaveLength(1);

    // A pending task and a free slot: a round would claim. A full dispatcher: it would not.
    await tasks.insertIfAbsent(makeTask());
    expect(await tasks.tickProbe(2, ['kubernetes'])).toMatchObject({ claimable: true, unwatched: false });
    const [started] = await tasks.claimPending(1);
    expect(await tasks.tickProbe(1, ['kubernetes'])).toMatchObject({ claimable: false, unwatched: true });

    // A live task of a backend that reports its changes is not the housekeeping's to ask about, once handed to its runtime.
    await db.query(`UPDATE "dispatcher"."tasks" SET runtime_backend = 'kubernetes' WHERE task_id = $1`, [started.taskId]);
    expect(await tasks.tickProbe(2, ['kubernetes'])).toMatchObject({ unwatched: true });
    await tasks.setRuntimeRef(started.taskId, 'job-1', 'replica-a');
    expect(await tasks.tickProbe(2, ['kubernetes'])).toMatchObject({ claimable: false, overdue: [], unwatched: false });
    expect(await tasks.tickProbe(2, [])).toMatchObject({ unwatched: true });
    // Not asked: the question reads every live row, and only the ticks that watch need it.
    expect(await tasks.tickProbe(2, null)).toMatchObject({ claimable: false, overdue: [], unwatched: null });

    // Past its deadline: found by id, and read whole only while it is still live and overdue.
    await db.query(`UPDATE "dispatcher"."tasks" SET deadline_at = now() - interval '1 second' WHERE task_id = $1`, [started.taskId]);
    const { overdue } = await tasks.tickProbe(2, ['kubernetes']);
    expect(overdue).toEqual([started.taskId]);
    expect((await tasks.overdue(overdue)).map((task) => task.taskId)).toEqual([started.taskId]);
    expect(await tasks.overdue([])).toEqual([]);
    await tasks.transition(started.taskId, 'timed_out');
    expect(await tasks.overdue(overdue)).toEqual([]);
    expect(await tasks.tickProbe(2, ['kubernetes'])).toMatchObject({ overdue: [] });
  });

  it('tells the tick a callback is due exactly when the delivery round would claim it', async () => {
    await db.query(`UPDATE "dispatcher"."callback_outbox" SET state = 'delivered' WHERE state = 'pending'`);
    const due = async () => (await tasks.tickProbe(2, null)).callbacksDue;
    const ended = makeTask({ status: 'running' });
    await tasks.insertIfAbsent(ended);
    await tasks.setRuntimeRef(ended.taskId!, 'pid-1', 'replica-a');
    await tasks.transition(ended.taskId!, 'completed', { exitCode: 0, resultKey: '' });
    // Its agent's output is still to be stored: the callback waits for it.
    expect(await due()).toBe(false);
    await db.query(`UPDATE "dispatcher"."tasks" SET logs_stored_at = now() WHERE task_id = $1`, [ended.taskId]);
    expect(await due()).toBe(true);
    // Waiting out a backoff, or leased to an attempt under way: not due.
    await db.query(`UPDATE "dispatcher"."callback_outbox" SET next_attempt_at = now() + interval '1 minute' WHERE task_id = $1`, [ended.taskId]);
    expect(await due()).toBe(false);
    // Output never stored, waited for long enough: due.
    await db.query(`UPDATE "dispatcher"."tasks" SET logs_stored_at = NULL WHERE task_id = $1`, [ended.taskId]);
    await db.query(`UPDATE "dispatcher"."callback_outbox" SET next_attempt_at = now(), created_at = now() - interval '31 seconds' WHERE task_id = $1`, [ended.taskId]);
    expect(await due()).toBe(true);
    await db.query(`UPDATE "dispatcher"."callback_outbox" SET state = 'failed' WHERE task_id = $1`, [ended.taskId]);
    expect(await due()).toBe(false);
  });
});
