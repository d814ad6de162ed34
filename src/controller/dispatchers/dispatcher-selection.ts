import { dispatcherState } from './dispatcher-state';
import { Dispatcher } from './dispatchers.entity';

/** What a task needs from the dispatcher that runs it. */
export interface DispatcherRequirement {
  runtimeType: string;
  labels: Record<string, string>;
  slug: string | null;
  /** The dispatcher the queue's claim reserved a slot on (scheduling/), offered first while it fits. */
  preferred?: string | null;
}

/**
 * The dispatchers one dispatch round may choose from, with the load of each: the larger of
 * what its last heartbeat reported and the tasks holding its slots (sent and still open, or
 * claimed by another round), both as the round's queue claim read them under its lock
 * (nothing is counted up and down between rounds). The round adds each task it sends, so one
 * round spreads its tasks rather than sending them all to the idlest.
 */
export class DispatcherPool {
  private readonly load = new Map<string, number>();

  constructor(
    private readonly dispatchers: Dispatcher[],
    heldSlots: Map<string, number>,
    private readonly now = new Date(),
  ) {
    for (const dispatcher of dispatchers) {
      this.load.set(dispatcher.guid, Math.max(dispatcher.activeTasks, heldSlots.get(dispatcher.guid) ?? 0));
    }
  }

  /**
   * The best online dispatcher offering the runtime type, carrying every label (and being
   * the named one when a slug is given) that the task has not been offered to yet: least
   * loaded first, then by name.
   */
  pick(requirement: DispatcherRequirement, tried: ReadonlySet<string> = new Set()): Dispatcher | null {
    let best: Dispatcher | null = null;
    const preferred = requirement.preferred ? this.dispatchers.find((dispatcher) => dispatcher.guid === requirement.preferred) : undefined;
    if (preferred && !tried.has(preferred.guid) && fits(preferred, requirement, this.now)) return preferred;
    for (const dispatcher of this.dispatchers) {
      if (tried.has(dispatcher.guid) || !fits(dispatcher, requirement, this.now)) continue;
      if (!best || this.loadOf(dispatcher) < this.loadOf(best) || (this.loadOf(dispatcher) === this.loadOf(best) && dispatcher.name < best.name)) {
        best = dispatcher;
      }
    }
    return best;
  }

  /** Counts a task sent to the dispatcher, for the rest of this round. */
  took(dispatcherGuid: string): void {
    this.load.set(dispatcherGuid, (this.load.get(dispatcherGuid) ?? 0) + 1);
  }

  loadOf(dispatcher: Dispatcher): number {
    return this.load.get(dispatcher.guid) ?? 0;
  }
}

export function fits(dispatcher: Dispatcher, requirement: DispatcherRequirement, now: Date): boolean {
  return (
    dispatcherState(dispatcher.lastHeartbeatAt, dispatcher.heartbeatIntervalSeconds, now) === 'online' &&
    dispatcher.backends.includes(requirement.runtimeType) &&
    Object.entries(requirement.labels).every(([key, value]) => dispatcher.labels[key] === value) &&
    (requirement.slug === null || dispatcher.slug === requirement.slug)
  );
}

/** Why a task found no dispatcher, as its `last_dispatch_error` says. */
export function describeMissingDispatcher(requirement: DispatcherRequirement): string {
  const labels = Object.entries(requirement.labels).map(([key, value]) => `${key}=${value}`);
  return [
    `No online dispatcher offers the runtime "${requirement.runtimeType}"`,
    labels.length ? ` with labels ${labels.join(', ')}` : '',
    requirement.slug ? ` under the slug "${requirement.slug}"` : '',
    '; the task waits for one.',
  ].join('');
}
