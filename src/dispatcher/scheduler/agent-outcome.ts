import { AgentState, StartGraces } from '../runtime/runtime';
import { TaskStatus } from '../tasks/task-state';
import { TaskPatch } from '../tasks/tasks.repository';

export interface Outcome {
  status: TaskStatus;
  patch: TaskPatch;
}

/**
 * What a runtime's report means for a task that has not checked back: null while the
 * agent is (still) on its way, else the final state with its exit code and message.
 */
export function outcomeOf(state: AgentState, startedAt: Date | null, graces: number | StartGraces, now = Date.now()): Outcome | null {
  switch (state.phase) {
    case 'running':
      return null;
    case 'starting': {
      const waited = startedAt ? (now - new Date(startedAt).getTime()) / 1000 : 0;
      const grace = graceFor(state.reason, graces);
      if (!state.reason || waited < grace) return null;
      return failed(-1, `The agent could not start within ${grace} s: ${describe(state.reason, state.message)}`);
    }
    case 'exited':
      return failed(state.exitCode, `The agent exited with code ${state.exitCode} without checking back${state.reason ? ` (${describe(state.reason, state.message)})` : ''}.`);
    case 'failed_to_start':
      return failed(-1, `The agent could not start: ${describe(state.reason, state.message)}`);
    case 'deadline_exceeded':
      return { status: 'timed_out', patch: { exitCode: -1, errorMessage: state.message ?? 'The runtime stopped the agent at its deadline.' } };
    case 'gone':
      return failed(-1, state.message ?? 'The agent is gone from the runtime and never checked back.');
  }
}

/** START_GRACE_SECONDS, or PENDING_GRACE_SECONDS for a pod that no node can take yet. */
function graceFor(reason: string | undefined, graces: number | StartGraces): number {
  if (typeof graces === 'number') return graces;
  return reason === 'Unschedulable' ? graces.pendingSeconds : graces.startSeconds;
}

function failed(exitCode: number, errorMessage: string): Outcome {
  return { status: 'failed', patch: { exitCode, errorMessage } };
}

function describe(reason: string, message?: string): string {
  return message ? `${reason}: ${message}` : reason;
}
