import { DispatcherRequirement, fits } from '../dispatchers/dispatcher-selection';
import { Dispatcher } from '../dispatchers/dispatchers.entity';

/** A pending task as the claim weighs it, in queue order. */
export interface ClaimCandidate {
  guid: string;
  requirement: DispatcherRequirement;
  concurrencyKey: string | null;
  concurrencyLimit: number | null;
}

/** What one claim decides: the tasks it takes (with the dispatcher whose slot each holds, null: no slot to hold), and why others wait. */
export interface ClaimPlan {
  chosen: Map<string, string | null>;
  waiting: Map<string, string>;
  /** Keys found at their limit: later passes of the same claim leave their tasks out. */
  fullKeys: Set<string>;
}

/**
 * The slots a claim hands out (issue 21, items 0 and 2): each dispatcher's capacity less the
 * tasks holding one of its slots, and each concurrency key's limit less the tasks holding
 * one of its slots, both read inside the claim's transaction and counted down as it chooses.
 */
export class ClaimSlots {
  constructor(
    private readonly dispatchers: Dispatcher[],
    private readonly dispatcherHeld: Map<string, number>,
    private readonly keyHeld: Map<string, number>,
    private readonly now = new Date(),
  ) {}

  readonly plan: ClaimPlan = { chosen: new Map(), waiting: new Map(), fullKeys: new Set() };
  /** The dispatchers each requirement fits, and why its tasks wait when all of those are full, by `requirementKey`. */
  private readonly fitting = new Map<string, Dispatcher[]>();
  private readonly busyReasons = new Map<string, string>();

  knowsKey(key: string): boolean {
    return this.keyHeld.has(key);
  }

  /** The slots of `key` held cluster-wide when the claim began. */
  learnKey(key: string, held: number): void {
    this.keyHeld.set(key, held);
  }

  /** Takes candidates in order until `size` are chosen; answers whether any slot may be left for a later pass. */
  take(candidates: ClaimCandidate[], size: number): boolean {
    for (const candidate of candidates) {
      if (this.plan.chosen.size >= size) return false;
      this.weigh(candidate);
    }
    return this.plan.chosen.size < size && this.anySlotLeft();
  }

  private weigh(candidate: ClaimCandidate): void {
    const { guid, concurrencyKey: key, concurrencyLimit: limit } = candidate;
    if (this.plan.chosen.has(guid) || this.plan.waiting.has(guid)) return;
    if (key !== null && limit !== null) {
      const held = this.keyHeld.get(key) ?? 0;
      if (held >= limit) {
        this.plan.fullKeys.add(key);
        this.plan.waiting.set(guid, `concurrency limit of ${key} reached (${held}/${limit})`);
        return;
      }
    }
    const requirement = requirementKey(candidate.requirement);
    const fitting = this.fittingOf(requirement, candidate.requirement);
    // No dispatcher fits at all, or one that reports no capacity does: the dispatch service
    // decides as it always has (it defers with its reason, or sends to the least loaded).
    let slot: string | null = null;
    if (fitting.length > 0 && !fitting.some(unbounded)) {
      const free = fitting.filter((dispatcher) => this.freeOf(dispatcher) > 0);
      if (free.length === 0) {
        this.plan.waiting.set(guid, this.busyReason(requirement, fitting));
        return;
      }
      const best = free.reduce((a, b) => (this.freeOf(b) > this.freeOf(a) || (this.freeOf(b) === this.freeOf(a) && b.name < a.name) ? b : a));
      this.dispatcherHeld.set(best.guid, this.heldOf(best) + 1);
      slot = best.guid;
    }
    if (key !== null) this.keyHeld.set(key, (this.keyHeld.get(key) ?? 0) + 1);
    this.plan.chosen.set(guid, slot);
  }

  /** The dispatchers a requirement fits, found once a claim: a window's tasks mostly ask the same. */
  private fittingOf(key: string, requirement: DispatcherRequirement): Dispatcher[] {
    let fitting = this.fitting.get(key);
    if (fitting === undefined) {
      fitting = this.dispatchers.filter((dispatcher) => fits(dispatcher, requirement, this.now));
      this.fitting.set(key, fitting);
    }
    return fitting;
  }

  /**
   * Why a task waits when every dispatcher its requirement fits is full. Written once a claim
   * for each requirement: a full dispatcher's count does not change for the rest of the claim
   * (only a dispatcher with a free slot is given a task), so neither does the text.
   */
  private busyReason(key: string, fitting: Dispatcher[]): string {
    let reason = this.busyReasons.get(key);
    if (reason === undefined) {
      reason = `Every fitting dispatcher is busy (${fitting.map((d) => `${d.slug} ${this.heldOf(d)}/${d.capacity}`).join(', ')}); the task waits for a free slot.`;
      this.busyReasons.set(key, reason);
    }
    return reason;
  }

  private anySlotLeft(): boolean {
    return this.dispatchers.some((dispatcher) => unbounded(dispatcher) || this.freeOf(dispatcher) > 0) || this.dispatchers.length === 0;
  }

  private heldOf(dispatcher: Dispatcher): number {
    return this.dispatcherHeld.get(dispatcher.guid) ?? 0;
  }

  private freeOf(dispatcher: Dispatcher): number {
    return (dispatcher.capacity ?? 0) - this.heldOf(dispatcher);
  }
}

/** What a requirement asks, as one string to find it by. */
function requirementKey(requirement: DispatcherRequirement): string {
  return JSON.stringify([requirement.runtimeType, requirement.slug, requirement.labels]);
}

/** A dispatcher that reports no capacity (none yet, or 0) is sent tasks as before the queue: without a limit. */
function unbounded(dispatcher: Dispatcher): boolean {
  return dispatcher.capacity === null || dispatcher.capacity <= 0;
}
