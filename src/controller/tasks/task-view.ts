import { queueView } from '../scheduling/queue-view';
import { policyOf } from '../scheduling/retry-policy';
import { traceIdOf } from '../../shared/tracing/trace-context';
import { Task } from './tasks.entity';

/** One attempt of a task, as the single-task view lists them. */
export interface AttemptView {
  attempt: number;
  dispatcher: string | null;
  dispatcher_task_id: string;
  status: string;
  /** Why an ended attempt was tried again: infra, timed_out or failed (null: the current attempt). */
  reason: string | null;
  error_message: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** What a view adds from other rows: the task's re-runs, and (single view) its attempts. */
export interface TaskViewExtras {
  reruns?: string[];
  attempts?: AttemptView[];
}

/** A task as the API shows it: the template, where it runs, its progress and its result. */
export function taskView(task: Task, extras: TaskViewExtras = {}) {
  const finished = ['completed', 'failed', 'timed_out', 'cancelled'].includes(task.status);
  return {
    guid: task.guid,
    status: task.status,
    agent_image: task.agentImage,
    runtime_target: task.runtimeTarget,
    resources: task.resources,
    env: task.env,
    ports: task.ports,
    skills: task.skills,
    timeout_seconds: task.timeoutSeconds,
    runtime_class: task.runtimeClass,
    network: task.network,
    security: task.security,
    ...task.podAdditions,
    secret_env: task.secretEnv ?? {},
    brief_key: task.briefKey,
    dispatcher_labels: task.dispatcherLabels,
    dispatcher: task.dispatcherSlug,
    requested_dispatcher: task.requestedDispatcher,
    workflow: task.workflowId,
    delivery_id: task.deliveryId,
    created_by: task.createdBy,
    progress: task.progress,
    result: finished
      ? {
          exit_code: task.exitCode,
          result_key: task.resultKey,
          result_metadata: task.resultMetadata,
          error_message: task.errorMessage ?? '',
        }
      : null,
    error_message: task.errorMessage,
    cancel_requested: task.cancelRequestedAt !== null,
    dispatch_attempts: task.dispatchAttempts,
    last_dispatch_error: task.status === 'pending' ? task.lastDispatchError : null,
    ...queueView(task),
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
    dispatched_at: task.dispatchedAt?.toISOString() ?? null,
    started_at: task.startedAt?.toISOString() ?? null,
    finished_at: task.finishedAt?.toISOString() ?? null,
    deadline_at: task.deadlineAt?.toISOString() ?? null,
    retry: policyOf(task.retry),
    attempt: task.attempt,
    max_attempts: policyOf(task.retry).max_attempts,
    next_attempt_at: task.status === 'pending' ? (task.nextDispatchAt?.toISOString() ?? null) : null,
    dead_letter: task.deadLetter,
    rerun_of: task.rerunOf,
    reruns: extras.reruns ?? [],
    trace_id: traceIdOf(task.traceParent),
    ...(extras.attempts ? { attempts: extras.attempts } : {}),
  };
}

export type TaskView = ReturnType<typeof taskView>;
