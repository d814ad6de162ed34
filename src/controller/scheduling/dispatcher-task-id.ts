import type { Task } from '../tasks/tasks.entity';

/**
 * The `task_id` the task's current attempt is known by on its dispatcher: the task's guid for
 * the first attempt, a fresh UUID for each later one (so a dispatcher's idempotent create
 * never takes a retry for the attempt it already ran).
 */
export function dispatcherTaskIdOf(task: Pick<Task, 'guid' | 'dispatcherTaskId'>): string {
  return task.dispatcherTaskId ?? task.guid;
}
