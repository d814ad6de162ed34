import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntityMetadata, In, IsNull, QueryResult } from 'typeorm';
import { CallbackOutboxEntity } from '../callbacks/callback-outbox.entity';
import { callbackBody } from '../callbacks/callback-body';
import { CALLBACK_DUE, OUTBOX } from '../callbacks/callback-due';
import { ACTIVE_STATUSES, FINAL_STATUSES, isFinal, sourcesOf, TaskStatus } from './task-state';
import { tasksFinished } from '../metrics/dispatcher-metrics';
import { TaskEntity } from './task.entity';
import { inJsonbOrder } from '../../shared/database/jsonb-order';
import { hydrate, insertParts, runPrepared, namedColumns, selectedColumns, setParts } from '../../shared/database/statements';
import { tripTransaction } from '../../shared/database/round-trips';

const TASKS = '"dispatcher"."tasks"';

/** Where a submitted task's agent runs (`submittedTo`). */
export interface SubmittedAgent {
  taskId: string;
  runtimeBackend: string;
  runtimeRef: string;
  runtimeOwner: string | null;
  poolAgentId: string | null;
}

/** The scheduler timer's questions, answered by one statement (`tickProbe`). */
export interface TickProbe {
  /** A start round would claim: a task is pending and a slot is free. */
  claimable: boolean;
  /** Live tasks past their deadline. */
  overdue: string[];
  /** A live task of a backend that does not report its changes, or not handed to its runtime yet; null when not asked. */
  unwatched: boolean | null;
  /** A callback in the outbox is due (`CALLBACK_DUE`): a delivery round would claim it. */
  callbacksDue: boolean;
}

/** Whether a task waits to be started: asked by the start loop's look and by a check-back's final move. */
const PENDING_WAITS = `EXISTS (SELECT 1 FROM ${TASKS} WHERE status = 'pending')`;
/** A start round would claim: a task waits and a slot is free (`$1` the capacity, `$2` the live statuses). */
const CLAIMABLE = `${PENDING_WAITS} AND (SELECT count(*) FROM ${TASKS} WHERE status = ANY($2)) < $1`;

/** Serialises capacity claims across replicas (any fixed number both sides agree on). */
const CLAIM_LOCK = 710_000_001;

/** The oldest pending tasks up to the free capacity, moved to `starting` for `claimant`; to be sent under CLAIM_LOCK. */
function claimStatement(capacity: number, claimant: string | null): { text: string; values: unknown[] } {
  return {
    text: `WITH free AS (SELECT greatest($1 - count(*), 0) AS slots FROM ${TASKS} WHERE status = ANY($2)),
         claimed AS (
           UPDATE ${TASKS} t SET status = 'starting', started_at = statement_timestamp(),
             deadline_at = statement_timestamp() + make_interval(secs => t.timeout_seconds), runtime_backend = t.runtime_type,
             claimed_by = $3
           WHERE t.task_id IN (SELECT task_id FROM ${TASKS} WHERE status = 'pending' ORDER BY created_at, seq
                               FOR UPDATE SKIP LOCKED LIMIT (SELECT slots FROM free))
           RETURNING t.*)
         SELECT * FROM claimed ORDER BY created_at, seq`,
    values: [capacity, ACTIVE_STATUSES, claimant],
  };
}

export type TaskPatch = Partial<Pick<TaskEntity,
  'exitCode' | 'resultKey' | 'resultMetadata' | 'errorMessage' | 'runtimeRef' | 'runtimeBackend' | 'logsStoredAt'>>;

export type SettledOutcome = Pick<TaskEntity, 'exitCode' | 'resultKey' | 'resultMetadata' | 'errorMessage'>;

/** What a check-in answers (`briefKey`, `env`, `skills`) and measures (the backend, from the creation). */
const CHECKED_IN_PROPERTIES = ['taskId', 'status', 'briefKey', 'env', 'skills', 'runtimeBackend', 'runtimeType', 'createdAt'] as const;
export type CheckedIn = Pick<TaskEntity, (typeof CHECKED_IN_PROPERTIES)[number]>;

/** A check-back's final move: the task, and whether a pending task waited when it was made. */
export interface CheckedBack {
  task: TaskEntity;
  pendingWaits: boolean;
}

/** The callback's fields when the patch sets them all and the status alone does not change them (a cancel reads the row's metadata). */
function settledOutcome(to: TaskStatus, patch: TaskPatch): SettledOutcome | null {
  if (to === 'cancelled') return null;
  const { exitCode, resultKey, resultMetadata, errorMessage } = patch;
  if (exitCode === undefined || resultKey === undefined || resultMetadata === undefined || errorMessage === undefined) return null;
  return { exitCode, resultKey, resultMetadata, errorMessage };
}

/**
 * Every query of the tasks table that is more than a find, and every state change. The
 * statements of a task's life (its insert, its reads by id, its moves, where its agent runs,
 * its progress) are prepared statements built from the entity's metadata (`statements.ts`):
 * TypeORM's query builder cost more CPU per call than PostgreSQL did.
 */
@Injectable()
export class TasksRepository {
  private readonly metadata: EntityMetadata;
  private readonly columns: string;
  private readonly checkedInColumns: string;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    this.metadata = db.getMetadata(TaskEntity);
    this.columns = selectedColumns(this.metadata);
    this.checkedInColumns = namedColumns<TaskEntity>(this.metadata, CHECKED_IN_PROPERTIES);
  }

  /**
   * Stores a new task and gives it back as stored, in one statement; null when the task id
   * exists already (the caller reads that row only then).
   */
  async insertIfAbsent(task: Partial<TaskEntity>): Promise<TaskEntity | null> {
    const insert = this.insertStatement(task);
    return this.firstTask(await runPrepared(this.db, insert.text, insert.values));
  }

  async findById(taskId: string): Promise<TaskEntity | null> {
    return this.firstTask(await runPrepared(this.db, `SELECT ${this.columns} FROM ${TASKS} WHERE task_id = $1`, [taskId]));
  }

  list(options: { limit: number; offset: number; status?: TaskStatus }): Promise<[TaskEntity[], number]> {
    return this.db.getRepository(TaskEntity).findAndCount({
      where: options.status ? { status: options.status } : {},
      order: { createdAt: 'DESC', seq: 'DESC' },
      take: options.limit,
      skip: options.offset,
    });
  }

  async callbacksOf(taskIds: string[]): Promise<Map<string, CallbackOutboxEntity>> {
    if (taskIds.length === 0) return new Map();
    const rows = await this.db.getRepository(CallbackOutboxEntity).findBy({ taskId: In(taskIds) });
    return new Map(rows.map((row) => [row.taskId, row]));
  }

  /**
   * Moves a task to `to` only while it is in a state that may move there, in one
   * conditional UPDATE; a final state writes its callback to the outbox in the same
   * transaction. Null when the task was not in such a state (someone else moved it).
   * `within`: a transaction the caller holds, for a move that belongs to a larger claim.
   */
  transition(taskId: string, to: TaskStatus, patch: TaskPatch = {}, within?: EntityManager): Promise<TaskEntity | null> {
    // A move to a live state is one statement; only a final one has an outbox row to write with it.
    if (!isFinal(to)) return this.move(within ?? this.db.manager, taskId, to, patch);
    const settled = within ? null : settledOutcome(to, patch);
    if (settled) return this.finishInOneStatement(taskId, to, settled).then((finished) => this.counted(finished?.task ?? null, to));
    const finish = async (manager: EntityManager) => {
      const task = await this.move(manager, taskId, to, patch);
      if (task) await this.enqueueCallback(manager, task);
      return task;
    };
    const moved = within ? finish(within) : this.db.transaction(finish);
    return moved.then((task) => this.counted(task, to));
  }

  /**
   * An agent's check-back: the final move and its callback in one statement (as `transition`
   * makes it), which also reads whether a pending task waits. The slot the task frees then goes
   * to that task without a look of its own, and a check-back with nothing waiting starts no
   * start round at all (`TaskSignals.taskFinished`). Null when the task was not live.
   */
  async checkBack(taskId: string, to: 'completed' | 'failed', outcome: SettledOutcome): Promise<CheckedBack | null> {
    const finished = await this.finishInOneStatement(taskId, to, outcome);
    this.counted(finished?.task ?? null, to);
    return finished;
  }

  private counted(task: TaskEntity | null, to: TaskStatus): TaskEntity | null {
    if (task) tasksFinished.inc({ outcome: to });
    return task;
  }

  /**
   * A final move whose patch names every field of the callback (a check-back's) writes the
   * task and its outbox row in one statement instead of a transaction of four: the body is
   * known before the row moves, and the insert sees only the row the update returned. The
   * same statement reads whether a pending task waits for the slot this one frees: the lock-free
   * look a start round would otherwise send next (`hasClaimable`), from the same snapshot.
   */
  private async finishInOneStatement(taskId: string, to: TaskStatus, outcome: SettledOutcome): Promise<CheckedBack | null> {
    // The metadata as the row will give it back (jsonb's key order), so the body is the one the row would make.
    const resultMetadata = outcome.resultMetadata === null ? null : inJsonbOrder(outcome.resultMetadata);
    const body = callbackBody({ status: to, ...outcome, resultMetadata } as TaskEntity);
    const rows: Record<string, unknown>[] = await this.db.query(
      `WITH moved AS (
         UPDATE ${TASKS} SET status = $2, exit_code = $3, result_key = $4, result_metadata = $5::jsonb, error_message = $6, finished_at = now()
         WHERE task_id = $1 AND status = ANY($7) RETURNING *),
       queued AS (
         INSERT INTO "dispatcher"."callback_outbox" (task_id, body, state, attempts, next_attempt_at)
         SELECT task_id, $8, 'pending', 0, now() FROM moved ON CONFLICT DO NOTHING)
       SELECT moved.*, ${PENDING_WAITS} AS pending_waits FROM moved`,
      [taskId, to, outcome.exitCode, outcome.resultKey, resultMetadata === null ? null : JSON.stringify(resultMetadata), outcome.errorMessage, sourcesOf(to), body],
    );
    const task = this.firstTask(rows);
    return task && { task, pendingWaits: rows[0].pending_waits === true };
  }

  /**
   * An agent's check-in: `starting` becomes `running`, reading back only what the check-in
   * answers and measures (a whole row is some forty columns for `pg` to describe and parse).
   * Null when the task was not `starting`.
   */
  checkIn(taskId: string): Promise<CheckedIn | null> {
    return this.move(this.db.manager, taskId, 'running', {}, this.checkedInColumns);
  }

  private async move(manager: EntityManager, taskId: string, to: TaskStatus, patch: TaskPatch, returning = this.columns): Promise<TaskEntity | null> {
    const set = setParts(this.metadata, { ...patch, status: to, ...(isFinal(to) ? { finishedAt: () => 'now()' } : {}) }, 3);
    const text = `UPDATE ${TASKS} SET ${set.assignments} WHERE task_id = $1 AND status = ANY($2) RETURNING ${returning}`;
    const params = [taskId, sourcesOf(to), ...set.params];
    // In a caller's transaction, on its connection (its structured answer: UPDATE's plain one is [rows, count]); else prepared, on the pool.
    const within = manager === this.db.manager ? undefined : manager.queryRunner;
    return this.firstTask(within ? ((await within.query(text, params, true)) as QueryResult).records : await runPrepared(this.db, text, params));
  }

  private async enqueueCallback(manager: EntityManager, task: TaskEntity): Promise<void> {
    await manager.createQueryBuilder().insert().into(CallbackOutboxEntity)
      .values({ taskId: task.taskId, body: callbackBody(task), state: 'pending', attempts: 0, nextAttemptAt: () => 'now()' })
      .orIgnore().execute();
  }

  /**
   * Whether a start round has anything to claim: a pending task, and fewer than `capacity`
   * active. One lock-free read: most rounds (the timer's, a task's end) find nothing, and
   * the claim's transaction and lock are then spared. A task stored or ended after this read
   * wakes a round of its own (one for a task stored here claims without asking).
   */
  async hasClaimable(capacity: number): Promise<boolean> {
    const [row] = await runPrepared<{ claimable: boolean }>(
      this.db,
      `SELECT ${CLAIMABLE} AS claimable`,
      [capacity, ACTIVE_STATUSES],
    );
    return row.claimable;
  }

  /**
   * Claims the oldest pending tasks up to the free capacity and marks them `starting`
   * (the time-out counts from here), in arrival order: by `created_at` as the task list
   * shows it, the sequence breaking ties.
   */
  claimPending(capacity: number, claimant: string | null = null): Promise<TaskEntity[]> {
    // The lock is taken before the statement, so its snapshot sees every claim committed before:
    // the transaction, the lock, the statement and COMMIT in one round trip.
    return tripTransaction(this.db, { lock: CLAIM_LOCK }, async (trips) => {
      const [claimed] = await trips.send([claimStatement(capacity, claimant)], { commit: true });
      return claimed.map((row) => this.toTask(row));
    });
  }

  /**
   * Stores a new task (null when its id exists already, as `insertIfAbsent`) and claims what
   * the free capacity allows, as `claimPending` does, in one transaction and one round trip:
   * a task that arrives at a dispatcher with a free slot is `starting` when the insert
   * answers, and no start round has to look for it. The claim takes the oldest pending
   * tasks first, so an earlier task still waiting is started before this one. `created` is
   * the row as inserted (`pending`: the task request's answer shows the task as accepted).
   */
  insertAndClaim(task: Partial<TaskEntity>, capacity: number, claimant: string | null): Promise<{ created: TaskEntity | null; claimed: TaskEntity[] }> {
    return tripTransaction(this.db, { lock: CLAIM_LOCK }, async (trips) => {
      const [inserted, claimed] = await trips.send([this.insertStatement(task), claimStatement(capacity, claimant)], { commit: true });
      // `created` is the row as the insert stored it (`pending`, as the task request's answer shows it); `claimed` as the claim left each.
      return { created: this.firstTask(inserted), claimed: claimed.map((row) => this.toTask(row)) };
    });
  }

  /** Records where the agent runs; the task's status then, or null when the task is gone. */
  async setRuntimeRef(taskId: string, ref: string, owner: string): Promise<TaskStatus | null> {
    const [row] = await runPrepared<{ status: TaskStatus }>(
      this.db,
      `UPDATE ${TASKS} SET runtime_ref = $2, runtime_owner = $3 WHERE task_id = $1 RETURNING status`,
      [taskId, ref, owner],
    );
    return row?.status ?? null;
  }

  /**
   * Takes over a task that a dispatcher claimed (`starting`) and never handed to a runtime
   * (it stopped in between): its start and deadline begin again now, for this process to
   * submit it. Only one replica wins a given orphan; false for the others.
   */
  async reclaimOrphan(taskId: string, claimedAt: Date): Promise<boolean> {
    const [rows] = (await this.db.query(
      `UPDATE ${TASKS} SET started_at = statement_timestamp(),
         deadline_at = statement_timestamp() + make_interval(secs => timeout_seconds)
       WHERE task_id = $1 AND status = 'starting' AND runtime_ref IS NULL AND date_trunc('milliseconds', started_at) = $2
       RETURNING task_id`,
      [taskId, claimedAt],
    )) as [unknown[], number];
    return rows.length === 1;
  }

  /**
   * Tasks `claimant` claimed and never handed to a runtime: at that replica's boot, the
   * claims its previous process left when it stopped between claiming and submitting.
   */
  unsubmittedClaimsOf(claimant: string): Promise<TaskEntity[]> {
    return this.db.getRepository(TaskEntity).find({
      where: { status: 'starting', claimedBy: claimant, runtimeRef: IsNull() },
      order: { seq: 'ASC' },
    });
  }

  /**
   * For the resync of backends that report their changes: where each of their live agents
   * runs, four columns a row, so asking about 10,000 running agents every resync does not
   * load 10,000 whole tasks (their env, brief and trace included).
   */
  async submittedTo(backends: string[]): Promise<SubmittedAgent[]> {
    if (backends.length === 0) return [];
    const rows = (await this.db.query(
      `SELECT task_id, runtime_backend, runtime_ref, runtime_owner, pool_agent_id FROM ${TASKS}
       WHERE status = ANY($1) AND runtime_ref IS NOT NULL AND runtime_backend = ANY($2)`,
      [ACTIVE_STATUSES, backends],
    )) as { task_id: string; runtime_backend: string; runtime_ref: string; runtime_owner: string | null; pool_agent_id: string | null }[];
    return rows.map((row) => ({ taskId: row.task_id, runtimeBackend: row.runtime_backend, runtimeRef: row.runtime_ref, runtimeOwner: row.runtime_owner, poolAgentId: row.pool_agent_id }));
  }

  /**
   * Tasks not final yet, but of the backends in `skipBackends` only those not yet handed to
   * their runtime, oldest first. The scheduler's housekeeping asks this (and `overdue`) every
   * few hundred milliseconds whether or not anything runs: prepared statements, not built
   * queries, so a server at rest does not build and describe them again each time.
   */
  async activeExcept(skipBackends: string[]): Promise<TaskEntity[]> {
    const rows = await runPrepared(
      this.db,
      `SELECT ${this.columns} FROM ${TASKS}
       WHERE status = ANY($1) AND (runtime_ref IS NULL OR runtime_backend IS NULL OR NOT (runtime_backend = ANY($2)))
       ORDER BY seq`,
      [ACTIVE_STATUSES, skipBackends],
    );
    return rows.map((row) => this.toTask(row));
  }

  /** Tasks holding a slot of this dispatcher: each heartbeat reports it. */
  async countActive(): Promise<number> {
    const [row] = await runPrepared<{ active: number }>(this.db, `SELECT count(*)::int AS active FROM ${TASKS} WHERE status = ANY($1)`, [ACTIVE_STATUSES]);
    return row.active;
  }

  /**
   * What the scheduler's timer asks twice a second, in one prepared statement: whether a
   * start round would claim (as `hasClaimable`), the ids of live tasks past their deadline,
   * and, when `reporting` is given, whether any live task is one the housekeeping asks its
   * runtime about (as `activeExcept(reporting)` would find), and whether a callback is due
   * (`CALLBACK_DUE`, the delivery round's claim). Nearly always `false`, none, `false` and
   * `false`: a dispatcher at rest sends this one statement a tick instead of one for each
   * question, and reads whole rows only for what it found. The last question reads every live
   * row (no index narrows it), so it is asked only on the ticks that watch (null when not
   * asked); PostgreSQL runs no subquery of a `CASE` branch it does not take.
   */
  async tickProbe(capacity: number, reporting: string[] | null): Promise<TickProbe> {
    const [row] = await runPrepared<TickProbe>(
      this.db,
      `SELECT ${CLAIMABLE} AS claimable,
              ARRAY(SELECT task_id::text FROM ${TASKS} WHERE status = ANY($2) AND deadline_at < now()) AS overdue,
              CASE WHEN $4::boolean THEN EXISTS (SELECT 1 FROM ${TASKS} WHERE status = ANY($2)
                        AND (runtime_ref IS NULL OR runtime_backend IS NULL OR NOT (runtime_backend = ANY($3)))) END AS unwatched,
              EXISTS (SELECT 1 FROM ${OUTBOX} due WHERE ${CALLBACK_DUE}) AS "callbacksDue"`,
      [capacity, ACTIVE_STATUSES, reporting ?? [], reporting !== null],
    );
    return row;
  }

  /** Tasks not final yet whose deadline has passed: of `ids` (a tick's probe found them), or all. */
  async overdue(ids?: string[]): Promise<TaskEntity[]> {
    // The ids first (pg describes and parses one column for each answer, not the entity's
    // forty), the rows only when there are some.
    const due = ids ?? (await runPrepared<{ task_id: string }>(this.db, `SELECT task_id FROM ${TASKS} WHERE status = ANY($1) AND deadline_at < now()`, [ACTIVE_STATUSES])).map((row) => row.task_id);
    if (due.length === 0) return [];
    const rows = await runPrepared(this.db, `SELECT ${this.columns} FROM ${TASKS} WHERE task_id = ANY($1) AND status = ANY($2) AND deadline_at < now()`, [due, ACTIVE_STATUSES]);
    return rows.map((row) => this.toTask(row));
  }

  /** Records progress while the task is live; false once it is final. */
  /** Keeps an agent's progress on a live task; the task as it is then, or null when it is not live (or not there). */
  async recordProgress(taskId: string, progress: { percentage: number; message: string; data: Record<string, unknown> }): Promise<TaskEntity | null> {
    return this.firstTask(await runPrepared(
      this.db,
      `UPDATE ${TASKS} SET progress_percentage = $2, progress_message = $3, progress_data = $4::jsonb, progress_updated_at = now()
       WHERE task_id = $1 AND status = ANY($5) RETURNING ${this.columns}`,
      [taskId, progress.percentage, progress.message, JSON.stringify(progress.data), ACTIVE_STATUSES],
    ));
  }

  /** The insert of a new task, nothing when its id exists; the row given back as `firstTask` reads it. */
  private insertStatement(task: Partial<TaskEntity>): { text: string; values: unknown[] } {
    const insertable = Object.fromEntries(Object.entries(task).filter(([property]) => this.metadata.findColumnWithPropertyName(property)?.isInsert));
    const parts = insertParts(this.metadata, insertable);
    return { text: `INSERT INTO ${TASKS} (${parts.names}) VALUES (${parts.placeholders}) ON CONFLICT (task_id) DO NOTHING RETURNING ${this.columns}`, values: parts.params };
  }

  /** The first row of a RETURNING answer as an entity, with the same value types a find gives. */
  private firstTask(raw: unknown): TaskEntity | null {
    const [row] = raw as Record<string, unknown>[];
    return row ? this.toTask(row) : null;
  }

  private toTask(row: Record<string, unknown>): TaskEntity {
    return hydrate<TaskEntity>(this.db, this.metadata, row);
  }

  /** Tasks whose brief is this object, newest first (an agent reading its brief without naming its task). */
  /** Tasks with this skill package pinned (a JSONB containment test), newest first. */
  withSkillPackage(storageRef: string): Promise<TaskEntity[]> {
    return this.db.getRepository(TaskEntity).createQueryBuilder('task')
      .where('task.skills @> CAST(:pinned AS jsonb)', { pinned: JSON.stringify([{ storage_ref: storageRef }]) })
      .orderBy('task.seq', 'DESC')
      .limit(200)
      .getMany();
  }

  withBrief(briefKey: string): Promise<TaskEntity[]> {
    return this.db.getRepository(TaskEntity).createQueryBuilder('task')
      .where('task.brief_key = :briefKey', { briefKey })
      .orderBy('task.seq', 'DESC')
      .limit(200)
      .getMany();
  }

  /**
   * Deletes up to `limit` tasks that ended more than `days` ago and have no callback still
   * to deliver, oldest first, with their outbox rows. `beforeDelete` removes what they keep
   * elsewhere (results, logs) while their rows are locked; rows another sweep holds are skipped.
   */
  deleteFinished(days: number, limit: number, beforeDelete: (taskIds: string[]) => Promise<void>): Promise<number> {
    return this.db.transaction(async (manager) => {
      const rows: { task_id: string }[] = await manager.query(
        `SELECT t.task_id FROM ${TASKS} t
         WHERE t.status = ANY($1) AND t.finished_at < now() - make_interval(days => $2)
           AND NOT EXISTS (SELECT 1 FROM "dispatcher"."callback_outbox" o WHERE o.task_id = t.task_id AND o.state = 'pending')
         ORDER BY t.finished_at LIMIT $3 FOR UPDATE OF t SKIP LOCKED`,
        [FINAL_STATUSES, days, limit],
      );
      if (rows.length === 0) return 0;
      const ids = rows.map((row) => row.task_id);
      await beforeDelete(ids);
      // The outbox rows go with their task (ON DELETE CASCADE).
      await manager.query(`DELETE FROM ${TASKS} WHERE task_id = ANY($1)`, [ids]);
      return ids.length;
    });
  }
}
