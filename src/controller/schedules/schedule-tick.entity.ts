import { Column, CreateDateColumn, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { Workflow } from '../workflows/workflows.entity';

/**
 * One tick of a workflow's schedule that made a task. The primary key is what makes a tick
 * happen once across every controller replica; a workflow's latest row is its schedule's
 * state (the last tick done), kept when older rows are pruned and whatever became of the task.
 */
@Entity({ name: 'schedule_ticks' })
export class ScheduleTick {
  @PrimaryColumn({ name: 'workflow_id', type: 'text', primaryKeyConstraintName: 'schedule_ticks_pkey' })
  @ForeignKey(() => Workflow, { name: 'schedule_ticks_workflow_id_fkey', onDelete: 'CASCADE' })
  workflowId: string;

  @PrimaryColumn({ name: 'tick_at', type: 'timestamptz', primaryKeyConstraintName: 'schedule_ticks_pkey' })
  tickAt: Date;

  @Column({ name: 'task_guid', type: 'uuid' })
  taskGuid: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
