import type { SecretEnv } from '../../shared/task-protocol/secret-env';
import { Check, Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import type { TaskNetwork, TaskSecurity, TaskSkill } from '../../shared/task-protocol/isolation';
import type { PodAdditions } from '../../shared/task-protocol/pod-additions';
import type { TaskPort, TaskResources } from '../../shared/task-protocol/task-request';
import { TaskStatus } from './task-state';

/**
 * One task as the dispatcher keeps it: the request (callback token sealed) and its life.
 * The indexes, checks and defaults repeat what the migrations build, so a
 * generated migration holds only real changes. TypeORM cannot mark an index column DESC:
 * the migration builds `tasks_created_at` on ("created_at" DESC, "seq" DESC) and
 * `tasks_status_created_at` on ("status", "created_at" DESC).
 */
@Entity({ name: 'tasks' })
@Index('tasks_pending_arrival', ['createdAt', 'seq'], { where: `"status" = 'pending'` })
@Index('tasks_active_deadline', ['deadlineAt'], { where: `"status" IN ('starting', 'running')` })
@Index('tasks_created_at', ['createdAt', 'seq'])
@Index('tasks_status_created_seq', ['status', 'createdAt', 'seq'])
// The host-local tasks of a replica that went silent (see replicas/).
@Index('tasks_runtime_owner_idx', ['runtimeOwner'], { where: `"status" IN ('starting', 'running')` })
@Index('tasks_finished_at', ['finishedAt'], { where: '"finished_at" IS NOT NULL' })
@Check('tasks_timeout_seconds_check', `"timeout_seconds" BETWEEN 1 AND 86400`)
@Check('tasks_status_check', `"status" IN ('pending', 'starting', 'running', 'completed', 'failed', 'timed_out', 'cancelled')`)
export class TaskEntity {
  @PrimaryColumn('uuid', { name: 'task_id', primaryKeyConstraintName: 'tasks_pkey' }) taskId: string;
  /** Breaks ties of `created_at`: pending tasks start in (created_at, seq) order. */
  @Column({ type: 'bigint', insert: false, update: false })
  @Generated('increment')
  seq: string;
  @Column('text', { name: 'agent_image' }) agentImage: string;
  @Column('text', { name: 'runtime_type' }) runtimeType: string;
  @Column('text', { name: 'runtime_namespace', default: '' }) runtimeNamespace: string;
  @Column('jsonb') resources: TaskResources;
  @Column('jsonb') env: Record<string, string>;
  @Column('jsonb') ports: TaskPort[];
  @Column('text', { name: 'brief_key', default: '' }) briefKey: string;
  @Column('text', { name: 'callback_url' }) callbackUrl: string;
  @Column('text', { name: 'callback_token_sealed' }) callbackTokenSealed: string;
  @Column('integer', { name: 'timeout_seconds' }) timeoutSeconds: number;
  /** Skill versions pinned by the controller: the packages this task's agent may download. */
  @Column('jsonb', { default: () => "'[]'" }) skills: TaskSkill[];
  /** Isolation asked for by the task; null takes the dispatcher's defaults when the agent starts. */
  @Column('text', { name: 'runtime_class', nullable: true }) runtimeClass: string | null;
  @Column('jsonb', { nullable: true }) network: TaskNetwork | null;
  @Column('jsonb', { nullable: true }) security: TaskSecurity | null;
  /** The task's own additions to its agent pod (labels, annotations, node_selector, tolerations, priority_class). */
  @Column('jsonb', { name: 'pod_additions', default: () => "'{}'" }) podAdditions: PodAdditions;
  /** `secret_env`: variable names to `<secret>/<key>` references, resolved when the agent starts; never the values. */
  @Column('jsonb', { name: 'secret_env', default: () => "'{}'" }) secretEnv: SecretEnv;
  /** W3C `traceparent` / `tracestate` of the controller's request that created the task; not part of the request digest. */
  @Column('text', { name: 'trace_parent', nullable: true }) traceParent: string | null;
  @Column('text', { name: 'trace_state', nullable: true }) traceState: string | null;
  /** Keyed digest of the normalised request: the same task id with another body is a conflict. */
  @Column('text', { name: 'request_digest' }) requestDigest: string;

  @Column('text', { default: 'pending' }) status: TaskStatus;
  @Column({ type: 'timestamptz', name: 'created_at', insert: false, update: false, default: () => 'now()' }) createdAt: Date;
  @Column('timestamptz', { name: 'started_at', nullable: true }) startedAt: Date | null;
  @Column('timestamptz', { name: 'deadline_at', nullable: true }) deadlineAt: Date | null;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt: Date | null;
  @Column('integer', { name: 'exit_code', nullable: true }) exitCode: number | null;
  @Column('text', { name: 'result_key', nullable: true }) resultKey: string | null;
  @Column('jsonb', { name: 'result_metadata', nullable: true }) resultMetadata: Record<string, unknown> | null;
  @Column('text', { name: 'error_message', nullable: true }) errorMessage: string | null;

  @Column('integer', { name: 'progress_percentage', nullable: true }) progressPercentage: number | null;
  @Column('text', { name: 'progress_message', nullable: true }) progressMessage: string | null;
  @Column('jsonb', { name: 'progress_data', nullable: true }) progressData: Record<string, unknown> | null;
  @Column('timestamptz', { name: 'progress_updated_at', nullable: true }) progressUpdatedAt: Date | null;

  @Column('text', { name: 'runtime_backend', nullable: true }) runtimeBackend: string | null;
  @Column('text', { name: 'runtime_ref', nullable: true }) runtimeRef: string | null;
  /** DISPATCHER_INSTANCE of the replica that submitted the agent. */
  @Column('text', { name: 'runtime_owner', nullable: true }) runtimeOwner: string | null;
  /** When the agent's output was stored at `logs/<task_id>.txt` (final tasks only). */
  @Column('timestamptz', { name: 'logs_stored_at', nullable: true }) logsStoredAt: Date | null;
  /** DISPATCHER_INSTANCE of the replica that claimed the task to start it. */
  @Column('text', { name: 'claimed_by', nullable: true }) claimedBy: string | null;
  /** The warm pool whose agent took the task (null: started cold). */
  @Column('text', { nullable: true }) pool: string | null;
  /** That agent's id, which is also its key in the runtime (a cold agent's key is the task id). */
  @Column('uuid', { name: 'pool_agent_id', nullable: true }) poolAgentId: string | null;
}

/** The key a task's agent has in its runtime: the pool agent's id when warm, else the task id. */
export function runtimeKeyOf(task: { taskId: string; poolAgentId?: string | null }): string {
  return task.poolAgentId ?? task.taskId;
}
