import type { PodAdditions } from '../../shared/task-protocol/pod-additions';
import { Check, Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { TaskNetwork, TaskSecurity } from '../../shared/task-protocol/isolation';
import type { TaskPort, TaskResources } from '../../shared/task-protocol/task-request';
import { Dispatcher } from '../dispatchers/dispatchers.entity';
import type { RetryPolicy } from '../scheduling/retry-policy';

export const CONCURRENCY_STRATEGIES = ['queue', 'cancel_in_progress', 'cancel_newest'] as const;
export type ConcurrencyStrategy = (typeof CONCURRENCY_STRATEGIES)[number];

export const TASK_STATUSES = ['pending', 'dispatched', 'running', 'completed', 'failed', 'timed_out', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export interface RuntimeTarget {
  type: string;
  namespace: string;
}

/** A skill pinned to the version it had when the task was created. */
export interface ResolvedSkill {
  slug: string;
  version_number: number;
  content_hash: string;
  storage_ref: string;
}

export interface TaskProgress {
  percentage: number | null;
  message: string | null;
  data: Record<string, unknown> | null;
  updated_at: string;
}

/** A task that holds a slot of its dispatcher and its concurrency key: dispatched or running, or claimed by a dispatch round. */
const HOLDS_SLOT = `("status" IN ('dispatched', 'running') OR ("status" = 'pending' AND "dispatch_claimed_until" IS NOT NULL))`;

/** A controller task: what to run, where it was sent, and what came back. */
@Entity({ name: 'tasks' })
@Index('tasks_status_created_idx', ['status', 'createdAt', 'guid'])
@Index('tasks_workflow_created_idx', ['workflowId', 'createdAt', 'guid'])
// The migration builds this one as ("created_at" DESC); TypeORM has no per-column order.
@Index('tasks_created_idx', ['createdAt', 'guid'])
@Index('tasks_finished_idx', ['finishedAt'], { where: '"finished_at" IS NOT NULL' })
@Index('tasks_open_deadline_idx', ['deadlineAt'], { where: `"status" IN ('dispatched', 'running')` })
@Index('tasks_pending_arrival_idx', ['createdAt', 'guid'], { where: `"status" = 'pending'` })
@Index('tasks_open_dispatcher_idx', ['dispatcherGuid'], { where: `"status" IN ('dispatched', 'running')` })
// The queue (scheduling/): the claim walks pending tasks in this order; the migration builds it as ("priority" DESC, ...).
@Index('tasks_claim_order_idx', ['priority', 'fairTag', 'createdAt', 'guid'], { where: `"status" = 'pending'` })
@Index('tasks_fairness_tail_idx', ['fairnessGroup', 'priority', 'fairTag'], { where: `"status" = 'pending'` })
@Index('tasks_concurrency_held_idx', ['concurrencyKey'], { where: `${HOLDS_SLOT} AND "concurrency_key" IS NOT NULL` })
@Index('tasks_dispatcher_held_idx', ['dispatcherGuid'], { where: `${HOLDS_SLOT} AND "dispatcher_guid" IS NOT NULL` })
@Index('tasks_superseded_open_idx', ['supersededBy'], { where: `"superseded_by" IS NOT NULL AND "status" IN ('dispatched', 'running')` })
@Check('tasks_priority_check', '"priority" BETWEEN -1000 AND 1000')
@Check('tasks_fairness_weight_check', '"fairness_weight" BETWEEN 1 AND 100')
@Index('tasks_dead_letter_idx', ['createdAt', 'guid'], { where: '"dead_letter"' })
@Index('tasks_rerun_of_idx', ['rerunOf'], { where: '"rerun_of" IS NOT NULL' })
@Check('tasks_status_check', `"status" IN (${TASK_STATUSES.map((status) => `'${status}'`).join(', ')})`)
export class Task {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'tasks_pkey' })
  guid: string;

  @Column({ type: 'text', default: 'pending' })
  status: TaskStatus;

  @Column({ name: 'agent_image', type: 'text' })
  agentImage: string;

  @Column({ name: 'runtime_target', type: 'jsonb' })
  runtimeTarget: RuntimeTarget;

  @Column({ type: 'jsonb' })
  resources: TaskResources;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  env: Record<string, string>;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  ports: TaskPort[];

  @Column({ type: 'jsonb', default: () => "'[]'" })
  skills: ResolvedSkill[];

  @Column({ name: 'timeout_seconds', type: 'integer' })
  timeoutSeconds: number;

  /** Isolation the task asked for; null fields take the dispatcher's defaults. */
  @Column({ name: 'runtime_class', type: 'text', nullable: true })
  runtimeClass: string | null;

  @Column({ type: 'jsonb', nullable: true })
  network: TaskNetwork | null;

  @Column({ type: 'jsonb', nullable: true })
  security: TaskSecurity | null;
  /** Labels, annotations, node_selector, tolerations and priority_class for the agent pod; checked by the dispatcher. */
  @Column({ name: 'pod_additions', type: 'jsonb', default: () => "'{}'" })
  podAdditions: PodAdditions;

  /** `secret_env`: variable names to `<secret>/<key>` references; the dispatcher resolves them, no role stores a value. */
  @Column({ name: 'secret_env', type: 'jsonb', default: () => "'{}'" })
  secretEnv: Record<string, string>;

  /** W3C `traceparent` / `tracestate` of the request that stored the task (shared/tracing); null when it had none. */
  @Column({ name: 'trace_parent', type: 'text', nullable: true })
  traceParent: string | null;

  @Column({ name: 'trace_state', type: 'text', nullable: true })
  traceState: string | null;

  @Column({ name: 'brief_key', type: 'text' })
  briefKey: string;

  /**
   * An inline brief as JSON text, kept with the task until the dispatch loop has written it
   * to object storage under `brief_key`. Lists never read it.
   */
  @Column({ name: 'brief_pending', type: 'text', nullable: true, select: false })
  briefPending: string | null;

  @Column({ name: 'dispatcher_labels', type: 'jsonb', default: () => "'{}'" })
  dispatcherLabels: Record<string, string>;

  /** The dispatcher slug the creator asked for, if any. */
  @Column({ name: 'requested_dispatcher', type: 'text', nullable: true })
  requestedDispatcher: string | null;

  @Column({ name: 'dispatcher_guid', type: 'uuid', nullable: true })
  @ForeignKey(() => Dispatcher, { name: 'tasks_dispatcher_guid_fkey', onDelete: 'SET NULL' })
  dispatcherGuid: string | null;

  @Column({ name: 'dispatcher_slug', type: 'text', nullable: true })
  dispatcherSlug: string | null;

  /** SHA-256 (hex) of the callback token sent to the dispatcher; the token itself is never kept. */
  @Column({ name: 'callback_token_hash', type: 'text', nullable: true })
  callbackTokenHash: string | null;

  @Column({ name: 'workflow_id', type: 'text', nullable: true })
  workflowId: string | null;

  @Column({ name: 'delivery_id', type: 'text', nullable: true })
  deliveryId: string | null;

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  @Column({ name: 'dispatch_attempts', type: 'integer', default: 0 })
  dispatchAttempts: number;

  @Column({ name: 'last_dispatch_error', type: 'text', nullable: true })
  lastDispatchError: string | null;

  /** While set and in the future, one replica is dispatching this task. */
  @Column({ name: 'dispatch_claimed_until', type: 'timestamptz', nullable: true })
  dispatchClaimedUntil: Date | null;

  @Column({ name: 'next_dispatch_at', type: 'timestamptz', nullable: true })
  nextDispatchAt: Date | null;

  @Column({ name: 'cancel_requested_at', type: 'timestamptz', nullable: true })
  cancelRequestedAt: Date | null;

  @Column({ type: 'jsonb', nullable: true })
  progress: TaskProgress | null;

  @Column({ name: 'exit_code', type: 'integer', nullable: true })
  exitCode: number | null;

  @Column({ name: 'result_key', type: 'text', nullable: true })
  resultKey: string | null;

  @Column({ name: 'result_metadata', type: 'jsonb', nullable: true })
  resultMetadata: Record<string, unknown> | null;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  /** Higher first (-1000..1000). */
  @Column({ type: 'integer', default: 0 })
  priority: number;

  /** At most `concurrency_limit` tasks of one key are dispatched or running at once, cluster-wide. */
  @Column({ name: 'concurrency_key', type: 'text', nullable: true })
  concurrencyKey: string | null;

  @Column({ name: 'concurrency_limit', type: 'integer', nullable: true })
  concurrencyLimit: number | null;

  @Column({ name: 'concurrency_strategy', type: 'text', nullable: true })
  concurrencyStrategy: ConcurrencyStrategy | null;

  /** Pending tasks of equal priority take turns across groups: the concurrency key, else the workflow, else the creator. */
  @Column({ name: 'fairness_group', type: 'text', default: '' })
  fairnessGroup: string;

  @Column({ name: 'fairness_weight', type: 'integer', default: 1 })
  fairnessWeight: number;

  /** The task's turn in the queue at its priority; set by the `tasks_fair_tag` trigger at insert. */
  @Column({ name: 'fair_tag', type: 'double precision', default: 0 })
  fairTag: number;

  /** The newer task of the key that replaced this one (`cancel_in_progress`); its cancel is sent by the dispatch loop. */
  @Column({ name: 'superseded_by', type: 'uuid', nullable: true })
  supersededBy: string | null;
  /** The retry policy the task was created with; null: the default policy. */
  @Column({ type: 'jsonb', nullable: true })
  retry: RetryPolicy | null;

  /** The attempt under way or next (1 for the first); earlier ones are in `task_attempts`. */
  @Column({ type: 'integer', default: 1 })
  attempt: number;

  /** The `task_id` this attempt is sent to a dispatcher under; null: the task's guid (attempt 1). */
  @Column({ name: 'dispatcher_task_id', type: 'uuid', nullable: true })
  dispatcherTaskId: string | null;

  /** Ended failed or timed_out and will not be tried again, and no re-run was made of it. */
  @Column({ name: 'dead_letter', type: 'boolean', default: false })
  deadLetter: boolean;

  /** The task this one re-runs. */
  @Column({ name: 'rerun_of', type: 'uuid', nullable: true })
  @ForeignKey(() => Task, { name: 'tasks_rerun_of_fkey', onDelete: 'SET NULL' })
  rerunOf: string | null;

  /** Dispatch time + timeout_seconds; the watchdog acts a grace period after it. */
  @Column({ name: 'deadline_at', type: 'timestamptz', nullable: true })
  deadlineAt: Date | null;
}
