import { Injectable, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { hydrate, runPrepared, selectedColumns } from '../../shared/database/statements';
import { EventFeed } from '../events/event-feed';
import { EVENTS } from '../events/event-sql';
import { TaskStatus, Task } from '../tasks/tasks.entity';
import { RetryReason } from './retry-policy';
import { TaskAttempt } from './task-attempt.entity';

const TASKS = '"controller"."tasks"';
const ATTEMPTS = '"controller"."task_attempts"';

/** One attempt ending in a retry: why, how, and when the next one may start. */
export interface RetryMove {
  guid: string;
  /** The attempt that ended; the move applies only while the task is still on it. */
  attempt: number;
  from: readonly TaskStatus[];
  status: 'failed' | 'timed_out';
  reason: RetryReason;
  errorMessage: string | null;
  delaySeconds: number;
  nextDispatcherTaskId: string;
}

/** The ended attempts of tasks, and the move that starts a task's next attempt. */
@Injectable()
export class TaskAttemptsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Optional() private readonly events?: EventFeed,
  ) {}

  /**
   * Ends the task's current attempt and makes it `pending` again for the next, in one
   * statement: the ended attempt's row (with its token's hash, so its late callbacks are
   * recognised), the task reset for a fresh dispatch under a new dispatcher task id and
   * without a valid callback token, `next_dispatch_at` after the backoff, and the
   * `task.retrying` event. Null when the task left that attempt or those states meanwhile.
   */
  async retry(move: RetryMove): Promise<Task | null> {
    const waitReason = `Attempt ${move.attempt} ${move.status === 'timed_out' ? 'timed out' : 'failed'} (${move.reason})`
      + `${move.errorMessage ? `: ${move.errorMessage}` : ''}; attempt ${move.attempt + 1} waits for its backoff.`;
    const [row] = await runPrepared(
      this.db,
      `WITH before AS (SELECT * FROM ${TASKS} WHERE guid = $1 AND attempt = $2 AND status = ANY($3)),
       moved AS (
         UPDATE ${TASKS} t SET status = 'pending', attempt = t.attempt + 1, dispatcher_task_id = $4, callback_token_hash = NULL,
           dispatcher_guid = NULL, dispatcher_slug = NULL,
           next_dispatch_at = now() + make_interval(secs => $5), last_dispatch_error = $6, dispatched_at = NULL, started_at = NULL,
           deadline_at = NULL, progress = NULL, exit_code = NULL, result_key = NULL, result_metadata = NULL, error_message = NULL,
           updated_at = now()
         FROM before b WHERE t.guid = b.guid AND t.attempt = b.attempt AND t.status = b.status
         RETURNING t.*),
       ended AS (
         INSERT INTO ${ATTEMPTS} (task_guid, attempt, dispatcher_guid, dispatcher_slug, dispatcher_task_id, callback_token_hash, status, reason, error_message, started_at)
         SELECT b.guid, b.attempt, b.dispatcher_guid, b.dispatcher_slug, COALESCE(b.dispatcher_task_id, b.guid), b.callback_token_hash, $7, $8, $9, b.dispatched_at
         FROM before b JOIN moved m ON m.guid = b.guid),
       event AS (
         INSERT INTO ${EVENTS} (kind, task_guid, data)
         SELECT 'task.retrying', m.guid, jsonb_build_object('task_guid', m.guid, 'status', m.status, 'workflow', m.workflow_id,
           'attempt', m.attempt, 'next_attempt_at', m.next_dispatch_at, 'reason', $8::text, 'error_message', $9::text,
           'updated_at', m.updated_at)
         FROM moved m)
       SELECT ${this.columns} FROM moved`,
      [move.guid, move.attempt, move.from, move.nextDispatcherTaskId, move.delaySeconds, waitReason, move.status, move.reason, move.errorMessage],
    );
    if (!row) return null;
    this.events?.written();
    return hydrate<Task>(this.db, this.db.getMetadata(Task), row);
  }

  /** The earlier attempt of the task whose callback token hashes to `tokenHash` (null: none). */
  async attemptOfToken(guid: string, tokenHash: string): Promise<number | null> {
    const [row] = await runPrepared<{ attempt: number }>(
      this.db,
      `SELECT attempt FROM ${ATTEMPTS} WHERE task_guid = $1 AND callback_token_hash = $2 ORDER BY attempt DESC LIMIT 1`,
      [guid, tokenHash],
    );
    return row ? Number(row.attempt) : null;
  }

  /** The task's ended earlier attempts, first first. */
  ofTask(guid: string): Promise<TaskAttempt[]> {
    return this.db.getRepository(TaskAttempt).find({ where: { taskGuid: guid }, order: { attempt: 'ASC' } });
  }

  private get columns(): string {
    this.selectList ??= selectedColumns(this.db.getMetadata(Task));
    return this.selectList;
  }

  private selectList?: string;
}
