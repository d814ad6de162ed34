import type { Task } from '../tasks/tasks.entity';

/** The task view's queue fields (CONTRACT 5, "Scheduling"): its priority, its key, and why a pending task waits. */
export function queueView(task: Task) {
  return {
    priority: task.priority,
    concurrency_key: task.concurrencyKey,
    waiting_reason: task.status === 'pending' ? task.lastDispatchError : null,
  };
}
