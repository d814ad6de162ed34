import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Task } from '../tasks/tasks.entity';

/**
 * An ended earlier attempt of a task that was tried again. The attempt under way (or the
 * last one of a final task) is the task row itself. Repeats migration 1790200000000.
 */
@Entity({ name: 'task_attempts' })
export class TaskAttempt {
  @PrimaryColumn({ name: 'task_guid', type: 'uuid', primaryKeyConstraintName: 'task_attempts_pkey' })
  @ForeignKey(() => Task, { name: 'task_attempts_task_guid_fkey', onDelete: 'CASCADE' })
  taskGuid: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'task_attempts_pkey' })
  attempt: number;

  @Column({ name: 'dispatcher_guid', type: 'uuid', nullable: true })
  dispatcherGuid: string | null;

  @Column({ name: 'dispatcher_slug', type: 'text', nullable: true })
  dispatcherSlug: string | null;

  @Column({ name: 'dispatcher_task_id', type: 'uuid' })
  dispatcherTaskId: string;

  /** The hash of the callback token this attempt was given: its late callbacks are told apart by it. */
  @Column({ name: 'callback_token_hash', type: 'text', nullable: true })
  callbackTokenHash: string | null;

  /** How the attempt ended: failed or timed_out. */
  @Column({ type: 'text' })
  status: string;

  /** The retry reason its ending was classified as: infra, timed_out or failed. */
  @Column({ type: 'text' })
  reason: string;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage: string | null;

  /** When it was sent to its dispatcher (null: it never was, e.g. every dispatcher refused it). */
  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', default: () => 'now()' })
  finishedAt: Date;
}
