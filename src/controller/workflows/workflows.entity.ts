import type { TaskNetwork, TaskSecurity } from '../../shared/task-protocol/isolation';
import type { PodAdditions } from '../../shared/task-protocol/pod-additions';
import type { ScheduleTrigger } from '../schedules/schedule-trigger';
import { Check, Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { StoredConcurrency } from '../scheduling/concurrency';
import type { RetryPolicy } from '../scheduling/retry-policy';
import { FilterValue } from './workflow-routing';

export interface StoredEventTrigger {
  source: string;
  event: string;
  filter: Record<string, FilterValue>;
}

export type StoredTrigger = StoredEventTrigger | ScheduleTrigger;

/** The task fields a workflow run gets; `brief` may hold `{{payload.x.y}}` placeholders. */
export interface StoredTaskTemplate extends PodAdditions {
  agent_image: string;
  runtime_target: { type: string; namespace?: string };
  resources?: { cpu?: string; memory?: string };
  env?: Record<string, string>;
  ports?: { container_port: number; protocol?: string }[];
  skills?: string[];
  timeout_seconds?: number;
  brief?: unknown;
  dispatcher_labels?: Record<string, string>;
  priority?: number;
  runtime_class?: string;
  network?: TaskNetwork;
  security?: TaskSecurity;
  /** References only (`<secret>/<key>`), never values. */
  secret_env?: Record<string, string>;
}

/** A routing rule: which events it takes, and the task each one becomes. */
@Entity({ name: 'workflows' })
// Routing reads the enabled workflows in (priority, created_at) order.
@Check('workflows_weight_check', '"weight" BETWEEN 1 AND 100')
@Index('workflows_routing_idx', ['priority', 'createdAt'], { where: '"enabled"' })
export class Workflow {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workflows_pkey' })
  id: string;

  @Column('text')
  name: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ type: 'integer', default: 100 })
  priority: number;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  triggers: StoredTrigger[];

  @Column({ name: 'task_template', type: 'jsonb' })
  taskTemplate: StoredTaskTemplate;

  /** `{key, limit, strategy}` for the workflow's tasks (scheduling/concurrency.ts); null: no limit. */
  @Column({ type: 'jsonb', nullable: true })
  concurrency: StoredConcurrency | null;

  /** The workflow's share of dispatches among fairness groups of equal priority (1..100). */
  @Column({ type: 'integer', default: 1 })
  weight: number;
  /** The retry policy of the tasks it creates; null: the default policy. */
  @Column({ type: 'jsonb', nullable: true })
  retry: RetryPolicy | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
