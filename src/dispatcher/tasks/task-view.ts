import { CallbackOutboxEntity } from '../callbacks/callback-outbox.entity';
import { TaskEntity } from './task.entity';

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);

/** The task record of CONTRACT section 3: the request without its callback token, and its life. */
export function taskView(task: TaskEntity, callback?: CallbackOutboxEntity) {
  return {
    task_id: task.taskId,
    agent_image: task.agentImage,
    runtime_target: { type: task.runtimeType, namespace: task.runtimeNamespace },
    resources: task.resources,
    env: task.env,
    ports: task.ports,
    brief_key: task.briefKey,
    callback_url: task.callbackUrl,
    timeout_seconds: task.timeoutSeconds,
    skills: task.skills ?? [],
    runtime_class: task.runtimeClass,
    network: task.network,
    security: task.security,
    ...task.podAdditions,
    secret_env: task.secretEnv ?? {},
    status: task.status,
    created_at: iso(task.createdAt),
    started_at: iso(task.startedAt),
    finished_at: iso(task.finishedAt),
    exit_code: task.exitCode,
    result_key: task.resultKey,
    result_metadata: task.resultMetadata,
    error_message: task.errorMessage,
    progress: {
      percentage: task.progressPercentage,
      message: task.progressMessage,
      data: task.progressData,
      updated_at: iso(task.progressUpdatedAt),
    },
    runtime: { backend: task.runtimeBackend, ref: task.runtimeRef },
    warm: task.poolAgentId !== null && task.poolAgentId !== undefined,
    pool: task.pool ?? null,
    callback: {
      state: callback?.state ?? 'pending',
      attempts: callback?.attempts ?? 0,
      last_error: callback?.lastError ?? null,
    },
  };
}

export type TaskView = ReturnType<typeof taskView>;
