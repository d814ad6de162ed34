import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Task } from '../tasks/tasks.entity';
import { TasksRepository } from '../tasks/tasks.repository';

const TASKS = '"controller"."tasks"';

/** How long a new task of a `cancel_*` key is kept from the queue before its admission lets it in (a crash in between only delays it). */
export const ADMISSION_HOLD_SECONDS = 30;

/**
 * What a new task of a key with a `cancel_newest` or `cancel_in_progress` strategy does to
 * its key (issue 21, item 2), decided once it is stored, under a transaction-scoped advisory
 * lock on the key so two tasks of one key arriving at once are decided one after the other.
 * Such a task is stored held back from the queue (`next_dispatch_at` a little ahead) and let
 * in here; `queue` keys need nothing: the claim alone keeps their limit.
 */
@Injectable()
export class ConcurrencyAdmission {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly tasks: TasksRepository,
  ) {}

  /** The new task as it stands after admission (cancelled at once under `cancel_newest` when the key is full). */
  async admit(task: Task): Promise<Task> {
    const key = task.concurrencyKey;
    const limit = task.concurrencyLimit;
    if (key === null || limit === null || task.concurrencyStrategy === null || task.concurrencyStrategy === 'queue') return task;
    // Every statement of the decision runs on the transaction's connection: one that waited for
    // another connection while holding the key's lock could wait forever on a small pool.
    await this.db.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 21))', [key]);
      if (task.concurrencyStrategy === 'cancel_newest') return this.cancelNewest(manager, task, key, limit);
      await this.cancelInProgress(manager, task, key, limit);
      await this.letIn(manager, task);
    });
    this.tasks.eventsCommitted();
    return (await this.tasks.findByGuid(task.guid)) ?? task;
  }

  /** Kubernetes CronJob's Forbid with `limit: 1`: while `limit` tasks of the key are open, the newest is cancelled. */
  private async cancelNewest(manager: EntityManager, task: Task, key: string, limit: number): Promise<void> {
    const [{ open }] = (await manager.query(
      `SELECT count(*)::int AS open FROM ${TASKS}
       WHERE concurrency_key = $1 AND status IN ('pending', 'dispatched', 'running') AND guid <> $2`,
      [key, task.guid],
    )) as { open: number }[];
    if (Number(open) < limit) return this.letIn(manager, task);
    await this.tasks.transition(task.guid, 'cancelled', {
      cancelRequestedAt: () => 'now()',
      errorMessage: `concurrency limit of ${key} reached (${open}/${limit}); the newest task is cancelled (cancel_newest)`,
    }, { from: ['pending'], manager });
  }

  /**
   * GitHub's cancel-in-progress: a waiting task of the key is replaced by the new one, and the
   * oldest dispatched or running tasks are marked superseded down to `limit - 1`, so the new
   * one can start once they end; the dispatch loop sends their cancels (`SupersededCancels`).
   */
  private async cancelInProgress(manager: EntityManager, task: Task, key: string, limit: number): Promise<void> {
    const waiting: { guid: string }[] = await manager.query(
      `SELECT guid FROM ${TASKS} WHERE concurrency_key = $1 AND status = 'pending' AND guid <> $2`,
      [key, task.guid],
    );
    for (const { guid } of waiting) {
      await this.tasks.transition(guid, 'cancelled', {
        cancelRequestedAt: () => 'now()',
        errorMessage: `replaced by the newer task ${task.guid} of ${key} (cancel_in_progress)`,
      }, { from: ['pending'], manager });
    }
    await this.supersedeOldest(manager, task.guid, key, limit);
  }

  private async supersedeOldest(manager: EntityManager, newer: string, key: string, limit: number): Promise<void> {
    const running: { guid: string }[] = await manager.query(
      `SELECT guid FROM ${TASKS}
       WHERE concurrency_key = $1 AND status IN ('dispatched', 'running') AND superseded_by IS NULL
       ORDER BY COALESCE(dispatched_at, created_at), guid`,
      [key],
    );
    const excess = running.length - (limit - 1);
    if (excess <= 0) return;
    await manager.query(
      `UPDATE ${TASKS} SET superseded_by = $2, updated_at = now() WHERE guid = ANY($1::uuid[]) AND superseded_by IS NULL`,
      [running.slice(0, excess).map((row) => row.guid), newer],
    );
  }

  /** Ends the hold: the task joins the queue now. */
  private async letIn(manager: EntityManager, task: Task): Promise<void> {
    await manager.query(`UPDATE ${TASKS} SET next_dispatch_at = NULL WHERE guid = $1 AND status = 'pending'`, [task.guid]);
  }
}
