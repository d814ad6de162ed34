import { Injectable, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntityMetadata } from 'typeorm';
import { equalityFilters, KeysetPage, keysetPage, KeysetRequest } from '../../shared/database/keyset-page';
import { GroupCommit } from '../../shared/database/group-commit';
import { byShape, hydrate, insertParts, insertRowsParts, namedColumns, runPrepared, selectedColumns, setParts } from '../../shared/database/statements';
import { CLAIMABLE_PENDING } from '../scheduling/queue-claim';
import { EventFeed } from '../events/event-feed';
import { kindOfMove, taskEventsInsert } from '../events/event-sql';
import { isFinal, statusesBefore } from './task-state';
import { Task, TASK_STATUSES, TaskStatus } from './tasks.entity';
import { countFinished } from '../metrics/controller-metrics';

const FINAL_TASK_STATUSES = TASK_STATUSES.filter(isFinal);

const TASKS = '"controller"."tasks"';

/** Column values for an UPDATE: a value, or an SQL expression as TypeORM takes it (`() => 'now()'`). */
export type TaskPatch = { [K in keyof Task]?: Task[K] | (() => string) };

/** A transition either moved the task, or did not and shows the task as it is now (null: no such task). */
export type Transition = { moved: true; task: Task } | { moved: false; task: Task | null };

/** Where one dispatch attempt sends a task: the dispatcher, and the hash of the callback token it gets. */
export interface DispatchAssignment {
  guid: string;
  dispatcherGuid: string;
  dispatcherSlug: string;
  callbackTokenHash: string;
}

/** A completion reported by the holder of the task's callback token. */
export interface TokenCompletion {
  guid: string;
  tokenHash: string;
  outcome: { exitCode: number | null; resultKey: string | null; resultMetadata: Record<string, unknown> | null; errorMessage: string | null };
}

/** Whether a completion moved its task, and whether a pending task was due and unclaimed when it did. */
export interface CompletionAnswer {
  moved: boolean;
  pendingWaits: boolean;
}

/** `from` narrows the states a move may start from; `stay` lets a task already in the target state take the patch. */
export interface MoveOptions {
  from?: readonly TaskStatus[];
  stay?: boolean;
  /** Moves inside this transaction, on its connection (a caller holding a lock in it must not wait for another). */
  manager?: EntityManager;
}

export interface TaskListQuery extends KeysetRequest {
  status?: TaskStatus;
  workflow?: string;
  /** Only dead letters (tasks_dead_letter_idx). */
  deadLetter?: boolean;
}

/**
 * Every read and write of the controller's `tasks` table. A status changes only through
 * `transition` (and its set-wise forms), one conditional UPDATE ... RETURNING guarded by the
 * states the task may come from, so a lost race is an answer and never a half-done write.
 */
@Injectable()
export class TasksRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    /** Absent where a repository is built by hand on a bare data source (no event stream to wake). */
    @Optional() private readonly events?: EventFeed,
  ) {}

  /**
   * Stores a new task with its `task.created` event, group-committed: a task waits only while
   * two writes are under way, and the tasks that came meanwhile go in one INSERT ... RETURNING
   * per shape of row (`byShape`).
   */
  insert(values: Partial<Task> & { guid: string }): Promise<Task> {
    return this.inserts.add(values);
  }

  private readonly inserts = new GroupCommit<Partial<Task> & { guid: string }, Task>((rows) => this.insertRows(rows), { maxBatch: 128, maxInFlight: 2 });

  private async insertRows(rows: (Partial<Task> & { guid: string })[]): Promise<Task[]> {
    const stored = new Map<string, Task>();
    await Promise.all(byShape(rows, (row) => row).map(async (group) => {
      const parts = insertRowsParts(this.metadata, group);
      const created = await runPrepared(
        this.db,
        `WITH created AS (INSERT INTO ${TASKS} (${parts.names}) ${parts.select} RETURNING *),
         event AS (${taskEventsInsert('task.created', 'created')})
         SELECT ${this.columns} FROM created`,
        parts.params,
      );
      for (const row of created) stored.set(row.guid as string, this.hydrate(row));
    }));
    if (stored.size > 0) this.events?.written();
    return rows.map((row) => {
      const task = stored.get(row.guid);
      if (!task) throw new Error(`Task ${row.guid} was not stored`);
      return task;
    });
  }

  /**
   * Stores a new task only if `precondition` (an INSERT ... RETURNING of another table, with
   * its parameters numbered from $1) stores its row: one statement, so both rows are written
   * or neither. Null when the precondition stored nothing (ON CONFLICT DO NOTHING).
   */
  async insertAfter(values: Partial<Task>, precondition: { text: string; params: unknown[] }): Promise<Task | null> {
    const parts = insertParts(this.metadata, values, precondition.params.length + 1);
    const [row] = await runPrepared(
      this.db,
      `WITH precondition AS (${precondition.text}),
       created AS (INSERT INTO ${TASKS} (${parts.names}) SELECT ${parts.placeholders} FROM precondition RETURNING *),
       event AS (${taskEventsInsert('task.created', 'created')})
       SELECT ${this.columns} FROM created`,
      [...precondition.params, ...parts.params],
    );
    if (!row) return null;
    this.events?.written();
    return this.hydrate(row);
  }

  /**
   * `insertAfter` for many tasks in one statement: `precondition` writes many rows
   * (`RETURNING` what `link` reads), and each task whose `link` holds is stored. The tasks set
   * the same properties (`shapeKey`). Answers the guids of the tasks stored.
   */
  async insertManyAfter(tasks: Partial<Task>[], precondition: { text: string; params: unknown[] }, link: string): Promise<Set<string>> {
    const parts = insertRowsParts(this.metadata, tasks, precondition.params.length + 1);
    const rows = await runPrepared<{ guid: string }>(
      this.db,
      `WITH precondition AS (${precondition.text}),
       created AS (INSERT INTO ${TASKS} (${parts.names}) SELECT * FROM (${parts.select}) AS t(${parts.names}) WHERE ${link} RETURNING *),
       event AS (${taskEventsInsert('task.created', 'created')})
       SELECT guid FROM created`,
      [...precondition.params, ...parts.params],
    );
    if (rows.length > 0) this.events?.written();
    return new Set(rows.map((row) => row.guid));
  }

  async findByGuid(guid: string): Promise<Task | null> {
    const [row] = await runPrepared(this.db, `SELECT ${this.columns} FROM ${TASKS} WHERE guid = $1`, [guid]);
    return row ? this.hydrate(row) : null;
  }

  /** The inline brief a task keeps until the dispatch loop stores it (null: none, or stored). */
  async pendingBrief(guid: string): Promise<string | null> {
    const [row] = (await this.db.query(`SELECT brief_pending FROM ${TASKS} WHERE guid = $1`, [guid])) as { brief_pending: string | null }[];
    return row?.brief_pending ?? null;
  }

  /** Newest first, paged by `(created_at, guid)`; each filter has an index in that order. */
  list(query: TaskListQuery): Promise<KeysetPage<Task>> {
    const tasks = this.db.getRepository(Task).createQueryBuilder('t');
    const equal = { 't.status': query.status || undefined, 't.workflow_id': query.workflow || undefined };
    // The dead letters have an index of their own, `(created_at, guid)` where dead: no lead then.
    const key = equalityFilters(tasks, { time: 't.created_at', id: 't.guid' }, equal, query.deadLetter ? [] : [['t.status'], ['t.workflow_id']]);
    if (query.deadLetter) tasks.andWhere('t.dead_letter');
    return keysetPage(tasks, key, query);
  }

  /**
   * Moves one task to `to` if it is in a state that may move there (`from` narrows those
   * states; `stay` adds `to` itself, for updates such as progress that keep the state). A
   * final state stamps `finished_at`. Not moved: the task as a fresh read shows it, for the
   * caller to judge (final states never change, so that read is the answer).
   */
  async transition(guid: string, to: TaskStatus, patch: TaskPatch = {}, options: MoveOptions = {}): Promise<Transition> {
    const [task] = await this.move(to, patch, options, { sql: 'guid = $', params: [guid] });
    if (task) return { moved: true, task };
    if (options.manager) {
      const [row] = (await options.manager.query(`SELECT ${this.columns} FROM ${TASKS} WHERE guid = $1`, [guid])) as Record<string, unknown>[];
      return { moved: false, task: row ? this.hydrate(row) : null };
    }
    return { moved: false, task: await this.findByGuid(guid) };
  }

  /**
   * `transition` for the holder of the task's callback token: the task moves only when
   * `tokenHash` is its `callback_token_hash`. Answers whether it moved, reading nothing back.
   */
  async transitionByToken(guid: string, tokenHash: string, to: TaskStatus, patch: TaskPatch = {}, options: MoveOptions = {}): Promise<boolean> {
    const moved = await this.move(to, patch, options, { sql: 'guid = $ AND callback_token_hash = $', params: [guid, tokenHash] }, 'guid');
    return moved.length > 0;
  }

  /**
   * `transitionByToken(guid, tokenHash, 'completed', outcome)` for many tasks in one statement
   * (a group-committed batch of callbacks). Answers, per item in order, whether its task moved;
   * a task named twice is sent once, for its first item, and the later ones answer false (the
   * caller then reads the task, as for any report that did not move it). The same statement
   * reads whether a pending task is due and unclaimed (`pendingWaits`, the dispatch loop's
   * probe's question): the slots the moves free have a taker only then.
   */
  async completeByTokens(items: TokenCompletion[]): Promise<CompletionAnswer[]> {
    const first = new Map<string, TokenCompletion>();
    for (const item of items) if (!first.has(item.guid)) first.set(item.guid, item);
    const sent = [...first.values()];
    const rows = await runPrepared<{ guid: string; pending_waits: boolean }>(
      this.db,
      `WITH v AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::jsonb[], $6::text[])
                    AS v(guid, token_hash, exit_code, result_key, result_metadata, error_message)),
       moved AS (UPDATE ${TASKS} t SET status = 'completed', exit_code = v.exit_code, result_key = v.result_key, result_metadata = v.result_metadata,
                   error_message = v.error_message, updated_at = now(), finished_at = now()
                 FROM v WHERE t.guid = v.guid AND t.callback_token_hash = v.token_hash AND t.status = ANY($7) RETURNING t.*),
       event AS (${taskEventsInsert(kindOfMove(true, false), 'moved')})
       SELECT guid, ${CLAIMABLE_PENDING} AS pending_waits FROM moved`,
      [
        sent.map((item) => item.guid), sent.map((item) => item.tokenHash), sent.map((item) => item.outcome.exitCode),
        sent.map((item) => item.outcome.resultKey), sent.map((item) => (item.outcome.resultMetadata === null ? null : JSON.stringify(item.outcome.resultMetadata))),
        sent.map((item) => item.outcome.errorMessage), statusesBefore('completed'),
      ],
    );
    countFinished('completed', rows.length);
    if (rows.length > 0) this.events?.written();
    const moved = new Set(rows.map((row) => row.guid));
    const pendingWaits = rows[0]?.pending_waits === true;
    return items.map((item) => ({ moved: first.get(item.guid) === item && moved.has(item.guid), pendingWaits }));
  }

  /** `transition` of a task still on attempt `attempt`: an ending of an earlier attempt never moves it. */
  async transitionAttempt(guid: string, attempt: number, to: TaskStatus, patch: TaskPatch = {}, options: MoveOptions = {}): Promise<Transition> {
    const [task] = await this.move(to, patch, options, { sql: 'guid = $ AND attempt = $', params: [guid, attempt] });
    if (task) return { moved: true, task };
    return { moved: false, task: await this.findByGuid(guid) };
  }

  /** The re-runs of each of `guids` (oldest first), from tasks_rerun_of_idx. */
  async rerunsOf(guids: string[]): Promise<Map<string, string[]>> {
    if (guids.length === 0) return new Map();
    const rows = await runPrepared<{ rerun_of: string; reruns: string[] }>(
      this.db,
      `SELECT rerun_of, array_agg(guid ORDER BY created_at, guid)::text[] AS reruns FROM ${TASKS} WHERE rerun_of = ANY($1::uuid[]) GROUP BY rerun_of`,
      [guids],
    );
    return new Map(rows.map((row) => [row.rerun_of, row.reruns]));
  }

  /**
   * Stores `values` as a re-run of the final task `original` and takes `original` off the dead
   * letters, in one statement; null when `original` is not final.
   */
  insertRerun(original: string, values: Partial<Task>): Promise<Task | null> {
    return this.insertAfter({ ...values, rerunOf: original }, {
      text: `UPDATE ${TASKS} SET dead_letter = false, updated_at = now() WHERE guid = $1 AND status = ANY($2) RETURNING guid`,
      params: [original, FINAL_TASK_STATUSES],
    });
  }

  /**
   * `transition` for many tasks with one patch (`attempts`: each only while still on that
   * attempt); answers the tasks that moved, with only the properties `read` names when given
   * (a whole row is some fifty columns for `pg` to describe and parse).
   */
  transitionMany(guids: string[], to: TaskStatus, patch?: TaskPatch, attempts?: number[]): Promise<Task[]>;
  transitionMany<K extends keyof Task & string>(guids: string[], to: TaskStatus, patch: TaskPatch, attempts: number[] | undefined, read: K[]): Promise<Pick<Task, K>[]>;
  transitionMany(guids: string[], to: TaskStatus, patch: TaskPatch = {}, attempts?: number[], read?: (keyof Task & string)[]): Promise<Partial<Task>[]> {
    if (guids.length === 0) return Promise.resolve([]);
    const returning = read ? namedColumns<Task>(this.metadata, read) : this.columns;
    if (attempts) {
      return this.move(to, patch, {}, { sql: '(guid, attempt) IN (SELECT * FROM unnest($::uuid[], $::int[]))', params: [guids, attempts] }, returning);
    }
    return this.move(to, patch, {}, { sql: 'guid = ANY($)', params: [guids] }, returning);
  }

  /** For the watchdog: dispatched or running tasks silent for `graceSeconds` past their deadline (tasks_open_deadline_idx). */
  async overdue(graceSeconds: number, limit: number): Promise<Task[]> {
    const rows = await runPrepared(
      this.db,
      `SELECT ${this.columns} FROM ${TASKS} WHERE status IN ('dispatched', 'running') AND deadline_at + make_interval(secs => $1) < now()
       ORDER BY deadline_at LIMIT $2`,
      [graceSeconds, limit],
    );
    return rows.map((row) => this.hydrate(row));
  }

  /** Marks an open, dispatched task as asked to cancel; null when it is not dispatched or running. */
  async markCancelRequested(guid: string): Promise<Task | null> {
    const result = await this.db.createQueryBuilder().update(Task)
      .set({ cancelRequestedAt: () => 'now()' })
      .where('guid = :guid', { guid })
      .andWhere(`status IN ('dispatched', 'running')`)
      .returning('*')
      .execute();
    const rows = result.raw as Record<string, unknown>[];
    return rows.length > 0 ? this.hydrate(rows[0]) : null;
  }

  /**
   * Claims up to `limit` pending tasks that are due, oldest first, for `leaseSeconds`; a
   * replica that dies holding a claim loses it when the lease ends. Rows another replica is
   * claiming right now are skipped, not waited for.
   */
  async claimPending(limit: number, leaseSeconds: number): Promise<Task[]> {
    const [rows] = (await this.db.query(
      `UPDATE ${TASKS} t SET dispatch_claimed_until = now() + make_interval(secs => $2)
       WHERE t.status = 'pending' AND t.guid IN (
         SELECT guid FROM ${TASKS}
         WHERE status = 'pending'
           AND (next_dispatch_at IS NULL OR next_dispatch_at <= now())
           AND (dispatch_claimed_until IS NULL OR dispatch_claimed_until < now())
         ORDER BY created_at, guid
         LIMIT $1
         FOR UPDATE SKIP LOCKED)
       RETURNING t.*`,
      [limit, leaseSeconds],
    )) as [Record<string, unknown>[], number];
    return rows.map((row) => this.hydrate(row)).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  /**
   * Records where each claimed task is about to be sent, with the hash of its callback
   * token, before the request leaves: a fast dispatcher may call back before it answers.
   * Answers the guids still pending (a cancel may have closed one meanwhile).
   */
  async assign(assignments: DispatchAssignment[]): Promise<Set<string>> {
    if (assignments.length === 0) return new Set();
    const [rows] = (await this.db.query(
      `UPDATE ${TASKS} t SET callback_token_hash = v.hash, dispatcher_guid = v.dispatcher_guid,
         dispatcher_slug = v.dispatcher_slug, dispatch_attempts = t.dispatch_attempts + 1, updated_at = now()
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) AS v(guid, dispatcher_guid, dispatcher_slug, hash)
       WHERE t.guid = v.guid AND t.status = 'pending'
       RETURNING t.guid`,
      [
        assignments.map((a) => a.guid),
        assignments.map((a) => a.dispatcherGuid),
        assignments.map((a) => a.dispatcherSlug),
        assignments.map((a) => a.callbackTokenHash),
      ],
    )) as [{ guid: string }[], number];
    return new Set(rows.map((row) => row.guid));
  }

  /**
   * Pending tasks that were not dispatched this round wait `retrySeconds`, each with its
   * reason; those whose brief is in object storage by now no longer carry it.
   */
  async deferPending(reasons: Map<string, string>, retrySeconds: number, briefStored: ReadonlySet<string>): Promise<Set<string>> {
    if (reasons.size === 0) return new Set();
    const guids = [...reasons.keys()];
    const [rows] = (await this.db.query(
      `UPDATE ${TASKS} t SET last_dispatch_error = v.reason, next_dispatch_at = now() + make_interval(secs => $3),
         brief_pending = CASE WHEN v.brief_stored THEN NULL ELSE t.brief_pending END, dispatch_claimed_until = NULL, updated_at = now()
       FROM unnest($1::uuid[], $2::text[], $4::boolean[]) AS v(guid, reason, brief_stored)
       WHERE t.guid = v.guid AND t.status = 'pending'
       RETURNING t.guid`,
      [guids, [...reasons.values()], retrySeconds, guids.map((guid) => briefStored.has(guid))],
    )) as [{ guid: string }[], number];
    return new Set(rows.map((row) => row.guid));
  }

  /**
   * Gives the pending tasks created since `since` (all, when null) that have no reason yet
   * `reason` as the reason they wait, without claiming or reading them back; rows another
   * replica holds are skipped. A walk of the pending index from `since`.
   */
  async noteWaiting(reason: string, since: Date | null): Promise<void> {
    await runPrepared(
      this.db,
      `UPDATE ${TASKS} SET last_dispatch_error = $1, updated_at = now()
       WHERE guid IN (SELECT guid FROM ${TASKS}
                      WHERE status = 'pending' AND created_at >= COALESCE($2::timestamptz, '-infinity') AND last_dispatch_error IS NULL
                      FOR UPDATE SKIP LOCKED)`,
      [reason, since],
    );
  }

  /**
   * Deletes up to `limit` tasks that ended more than `days` ago, oldest first. `beforeDelete`
   * removes what they keep elsewhere (their briefs) while their rows are locked, so a row
   * goes only once its objects are gone; rows another replica's sweep holds are skipped.
   */
  deleteFinished(days: number, limit: number, beforeDelete: (tasks: { guid: string; briefKey: string }[]) => Promise<void>): Promise<number> {
    return this.db.transaction(async (manager) => {
      const rows: { guid: string; brief_key: string }[] = await manager.query(
        `SELECT guid, brief_key FROM ${TASKS}
         WHERE status = ANY($1) AND finished_at < now() - make_interval(days => $2)
         ORDER BY finished_at LIMIT $3 FOR UPDATE SKIP LOCKED`,
        [FINAL_TASK_STATUSES, days, limit],
      );
      if (rows.length === 0) return 0;
      await beforeDelete(rows.map((row) => ({ guid: row.guid, briefKey: row.brief_key })));
      await manager.query(`DELETE FROM ${TASKS} WHERE guid = ANY($1)`, [rows.map((row) => row.guid)]);
      return rows.length;
    });
  }

  /** Ends this replica's claims (the round is over, or the process stops). */
  async releaseClaims(guids: string[]): Promise<void> {
    if (guids.length === 0) return;
    await this.db.query(`UPDATE ${TASKS} SET dispatch_claimed_until = NULL WHERE guid = ANY($1) AND dispatch_claimed_until IS NOT NULL`, [guids]);
  }

  /**
   * One conditional UPDATE ... RETURNING (`returning`: the columns read back): `where` is SQL
   * whose `$` placeholders take its params in order, after the patch's own.
   */
  private async move(
    to: TaskStatus,
    patch: TaskPatch,
    options: MoveOptions,
    where: { sql: string; params: unknown[] },
    returning = this.columns,
  ): Promise<Task[]> {
    const allowed = options.stay ? [...statusesBefore(to), to] : statusesBefore(to);
    const from = options.from ? allowed.filter((status) => options.from!.includes(status)) : allowed;
    const values = { ...patch, status: to, updatedAt: () => 'now()', ...(isFinal(to) ? { finishedAt: () => 'now()' } : {}) };
    const set = setParts(this.metadata, values);
    let next = set.params.length + 1;
    const from$ = `$${next++}`;
    const condition = where.sql.replace(/\$/g, () => `$${next++}`);
    // The move and its events are one statement: they commit together or not at all.
    const kind = kindOfMove(isFinal(to), 'progress' in patch);
    const text = `WITH moved AS (UPDATE ${TASKS} SET ${set.assignments} WHERE status = ANY(${from$}) AND ${condition} RETURNING *),
       event AS (${taskEventsInsert(kind, 'moved')})
       SELECT ${returning} FROM moved`;
    const params = [...set.params, from, ...where.params];
    const rows = options.manager
      ? ((await options.manager.query(text, params)) as Record<string, unknown>[])
      : await runPrepared(this.db, text, params);
    // `stay` may rewrite a task already in `to`: only a real move ends a task.
    if (isFinal(to) && !options.stay) countFinished(to, rows.length);
    // Inside a caller's transaction the events are not committed yet: the caller says so after its commit.
    if (rows.length > 0 && !options.manager) this.events?.written();
    return rows.map((row) => this.hydrate(row));
  }

  /** Tells the event feed that a transaction which moved tasks (`MoveOptions.manager`) has committed. */
  eventsCommitted(): void {
    this.events?.written();
  }

  private get metadata(): EntityMetadata {
    return this.db.getMetadata(Task);
  }

  /** The columns a task is read with (the inline brief is not one: see `brief_pending`). */
  private get columns(): string {
    this.selectList ??= selectedColumns(this.metadata);
    return this.selectList;
  }

  private selectList?: string;

  /** A row as PostgreSQL returned it, as the entity TypeORM would have loaded. */
  private hydrate(row: Record<string, unknown>): Task {
    return hydrate<Task>(this.db, this.metadata, row);
  }
}
