import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { TaskEntity } from '../tasks/task.entity';

export type CallbackState = 'pending' | 'delivered' | 'failed';

/**
 * One callback owed to the controller, written in the same transaction as the task's
 * final state. `body` is the exact JSON sent (and signed) on every attempt. At most one per
 * task; it goes with its task. Constraints, index and defaults repeat migration 1710000000000.
 */
@Entity({ name: 'callback_outbox' })
@Unique('callback_outbox_task_id_key', ['taskId'])
@Index('callback_outbox_due', ['nextAttemptAt'], { where: `"state" = 'pending'` })
@Check('callback_outbox_state_check', `"state" IN ('pending', 'delivered', 'failed')`)
export class CallbackOutboxEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'callback_outbox_pkey' }) id: string;
  @Column('uuid', { name: 'task_id' })
  @ForeignKey(() => TaskEntity, { name: 'callback_outbox_task_id_fkey', onDelete: 'CASCADE' })
  taskId: string;
  @Column('text') body: string;
  @Column('text', { default: 'pending' }) state: CallbackState;
  @Column('integer', { default: 0 }) attempts: number;
  @Column('timestamptz', { name: 'next_attempt_at', default: () => 'now()' }) nextAttemptAt: Date;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column({ type: 'timestamptz', name: 'created_at', insert: false, update: false, default: () => 'now()' }) createdAt: Date;
  @Column('timestamptz', { name: 'delivered_at', nullable: true }) deliveredAt: Date | null;
  /** The replica (DISPATCHER_INSTANCE) that last claimed the row to send it. */
  @Column('text', { name: 'claimed_by', nullable: true }) claimedBy: string | null;
}
