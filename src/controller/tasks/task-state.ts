import { StateMachine } from '../../shared/state/state-machine';
import { TaskStatus } from './tasks.entity';

export const FINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'timed_out', 'cancelled'];
export const OPEN_STATUSES: readonly TaskStatus[] = ['pending', 'dispatched', 'running'];

/** pending -> dispatched -> running -> completed | failed | timed_out | cancelled. */
const NEXT: Record<TaskStatus, readonly TaskStatus[]> = {
  // A dispatcher may answer before the controller has recorded the dispatch.
  pending: ['dispatched', 'running', ...FINAL_STATUSES],
  dispatched: ['running', ...FINAL_STATUSES],
  running: FINAL_STATUSES,
  completed: [],
  failed: [],
  timed_out: [],
  cancelled: [],
};

const CONTROLLER_TASKS = new StateMachine<TaskStatus>(NEXT, FINAL_STATUSES);

export const isFinal = (status: TaskStatus): boolean => CONTROLLER_TASKS.isFinal(status);
export const canTransition = (from: TaskStatus, to: TaskStatus): boolean => CONTROLLER_TASKS.canTransition(from, to);
/** The states a task may be in for a move to `to`; used as the guard of a conditional UPDATE. */
export const statusesBefore = (to: TaskStatus): TaskStatus[] => CONTROLLER_TASKS.sourcesOf(to);

export type CallbackStatus = 'completed' | 'failed' | 'timed_out';

/**
 * The final status a callback means. The seed has no cancelled status: a dispatcher reports a
 * cancel as failed with `result_metadata.reason: "cancelled"`, which is a cancel only when the
 * controller asked for one.
 */
export function finalStatusOfCallback(
  status: CallbackStatus,
  resultMetadata: Record<string, unknown> | null | undefined,
  cancelRequested: boolean,
): TaskStatus {
  if (status === 'failed' && cancelRequested && resultMetadata?.reason === 'cancelled') return 'cancelled';
  return status;
}

export type CallbackDecision = { kind: 'apply'; to: TaskStatus } | { kind: 'duplicate' } | { kind: 'conflict' };

/** What a callback does to a task now in `current`: apply it, a repeat, or a contradiction. */
export function decideCallback(current: TaskStatus, reported: TaskStatus): CallbackDecision {
  if (isFinal(current)) return current === reported ? { kind: 'duplicate' } : { kind: 'conflict' };
  return { kind: 'apply', to: reported };
}
