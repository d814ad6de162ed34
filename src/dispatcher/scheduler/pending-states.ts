import { AgentState, hasEnded } from '../runtime/runtime';

/**
 * What the runtimes reported and the scheduler has not applied yet: the latest state per
 * agent (its task id, or its pool agent id), except that an end stands. A later report of
 * the same agent (a late event of its ended pod or container) cannot take it back.
 */
export class PendingStates {
  private readonly states = new Map<string, AgentState>();

  get size(): number {
    return this.states.size;
  }

  put(runtimeKey: string, state: AgentState): void {
    const pending = this.states.get(runtimeKey);
    if (pending && hasEnded(pending) && !hasEnded(state)) return;
    this.states.set(runtimeKey, state);
  }

  /** Everything pending, in the order first reported; the set is empty afterwards. */
  take(): [string, AgentState][] {
    const taken = [...this.states];
    this.states.clear();
    return taken;
  }
}
