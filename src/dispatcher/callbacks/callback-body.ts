import { TaskEntity } from '../tasks/task.entity';

/** The seed's callback body. A cancelled task is reported as failed (the seed has no cancelled status). */
export function callbackBody(task: TaskEntity): string {
  const cancelled = task.status === 'cancelled';
  return JSON.stringify({
    status: cancelled ? 'failed' : task.status,
    exit_code: task.exitCode ?? -1,
    result_key: task.resultKey ?? '',
    result_metadata: cancelled ? { ...(task.resultMetadata ?? {}), reason: 'cancelled' } : (task.resultMetadata ?? {}),
    error_message: cancelled ? 'cancelled' : (task.errorMessage ?? ''),
  });
}

/** `<controller>/api/v1/tasks/<guid>/progress/`, next to the task's callback address. */
export function progressUrl(callbackUrl: string, taskId: string): string {
  const match = /^(.*\/api\/v1\/tasks\/[^/]+)\/callback\/?$/.exec(callbackUrl);
  if (match) return `${match[1]}/progress/`;
  return `${new URL(callbackUrl).origin}/api/v1/tasks/${taskId}/progress/`;
}
