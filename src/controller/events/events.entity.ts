import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const EVENT_KINDS = ['task.created', 'task.status', 'task.progress', 'task.finished', 'task.retrying', 'dispatcher.state'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** One event of the stream; its id is the SSE `id` a client resumes from. Repeats migration 1780200000000. */
@Entity({ name: 'events' })
@Index('events_created_idx', ['createdAt'])
@Index('events_task_guid_id_idx', ['taskGuid', 'id'])
export class TaskEvent {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'events_pkey' })
  id: string;

  @Column({ type: 'text' })
  kind: EventKind;

  @Column({ name: 'task_guid', type: 'uuid', nullable: true })
  taskGuid: string | null;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
