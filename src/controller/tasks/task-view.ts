import { Task } from './tasks.entity';

/** A task as the API shows it: the template, where it runs, its progress and its result. */
export function taskView(task: Task) {
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
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
    dispatched_at: task.dispatchedAt?.toISOString() ?? null,
    started_at: task.startedAt?.toISOString() ?? null,
    finished_at: task.finishedAt?.toISOString() ?? null,
    deadline_at: task.deadlineAt?.toISOString() ?? null,
  };
}

export type TaskView = ReturnType<typeof taskView>;
