import { StateMachine } from '../../shared/state/state-machine';

/**
 * The dispatcher's task states (CONTRACT section 3) and every move between them. The
 * database applies a move only while the task is still in one of `sourcesOf(target)`,
 * so two racing requests or replicas can never both move one task.
 */
export const TASK_STATUSES = ['pending', 'starting', 'running', 'completed', 'failed', 'timed_out', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const FINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'timed_out', 'cancelled'];
export const ACTIVE_STATUSES: readonly TaskStatus[] = ['starting', 'running'];

const TRANSITIONS: Record<TaskStatus, readonly TaskStatus[]> = {
  // A submit that the runtime refuses fails the task before it ever starts.
  pending: ['starting', 'failed', 'cancelled'],
  // An agent may check back before its check-in was seen; the time-out counts from here.
  starting: ['running', 'completed', 'failed', 'timed_out', 'cancelled'],
  running: ['completed', 'failed', 'timed_out', 'cancelled'],
  completed: [],
  failed: [],
  timed_out: [],
  cancelled: [],
};

const DISPATCHER_TASKS = new StateMachine<TaskStatus>(TRANSITIONS, FINAL_STATUSES);

export const isFinal = (status: TaskStatus): boolean => DISPATCHER_TASKS.isFinal(status);
export const canTransition = (from: TaskStatus, to: TaskStatus): boolean => DISPATCHER_TASKS.canTransition(from, to);
/** The states a task may be in for a move to `to` to apply. */
export const sourcesOf = (to: TaskStatus): TaskStatus[] => DISPATCHER_TASKS.sourcesOf(to);

/** How long an agent may keep running after its task is final (a check-back's tidy-up) before it is stopped. */
export const AGENT_EXIT_GRACE_MS = 15_000;

/** A final task whose agent is still within AGENT_EXIT_GRACE_MS: its own stop comes then, not a sweep's. */
export const inExitGrace = (task: { finishedAt: Date | null }, now = Date.now()): boolean =>
  task.finishedAt !== null && now - task.finishedAt.getTime() < AGENT_EXIT_GRACE_MS;
