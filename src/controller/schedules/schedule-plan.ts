import { cronOf, ScheduleTrigger, tickBefore } from './schedule-trigger';

/**
 * Which ticks a workflow's schedule owes at a given moment. A tick is on time when it fell
 * while this replica's ticker was running and at most ON_TIME_WINDOW_MS ago: every one of
 * those is owed, so a round that runs late (a busy event loop, a slow database) loses
 * none. Older ticks were missed (no ticker ran, or the database was away for long):
 * `catch_up: latest` owes the most recent of them once, `none` owes none.
 */

/** How late a tick may be made and still count as on time. */
export const ON_TIME_WINDOW_MS = 15_000;
/** At most this many ticks per workflow in one round; the next round takes the rest. */
export const MAX_TICKS_PER_ROUND = 100;

export interface PlannedTick {
  time: Date;
  /** The tick before it that made a task (or, for a schedule's first, the tick the cron had before it). */
  previousTime: Date | null;
  trigger: ScheduleTrigger;
}

export interface ScheduleState {
  /** Ticks at or before this belong to no schedule of this workflow (it was created or changed then). */
  since: Date;
  /** The latest tick that made a task, if any. */
  lastTick: Date | null;
}

/** The ticks owed at `now`, oldest first, each time once across the triggers. */
export function dueTicks(triggers: ScheduleTrigger[], state: ScheduleState, now: Date, runningSince: Date): PlannedTick[] {
  const floor = state.lastTick && state.lastTick > state.since ? state.lastTick : state.since;
  const onTimeFrom = new Date(Math.max(runningSince.getTime(), now.getTime() - ON_TIME_WINDOW_MS));
  const owed = new Map<number, ScheduleTrigger>();
  let missed: { time: Date; trigger: ScheduleTrigger } | null = null;
  for (const trigger of triggers) {
    for (const time of ticksBetween(trigger, onTimeFrom, floor, now)) if (!owed.has(time.getTime())) owed.set(time.getTime(), trigger);
    if (trigger.catch_up !== 'latest') continue;
    const latestMissed = tickBefore(trigger, onTimeFrom);
    if (latestMissed && latestMissed > floor && (!missed || latestMissed > missed.time)) missed = { time: latestMissed, trigger };
  }
  if (missed && !owed.has(missed.time.getTime())) owed.set(missed.time.getTime(), missed.trigger);
  const times = [...owed.keys()].sort((a, b) => a - b).slice(0, MAX_TICKS_PER_ROUND);
  let previous = state.lastTick;
  return times.map((time) => {
    const trigger = owed.get(time)!;
    const tick = { time: new Date(time), previousTime: previous ?? tickBefore(trigger, new Date(time)), trigger };
    previous = tick.time;
    return tick;
  });
}

/** Ticks of one trigger at or after `from`, after `floor` and at or before `now`. */
function ticksBetween(trigger: ScheduleTrigger, from: Date, floor: Date, now: Date): Date[] {
  const ticks: Date[] = [];
  const pattern = cronOf(trigger);
  // nextRun is strictly after its reference: start a millisecond early so a tick at `from` counts.
  let next = pattern.nextRun(from > floor ? new Date(from.getTime() - 1) : floor);
  while (next && next <= now && ticks.length < MAX_TICKS_PER_ROUND) {
    ticks.push(next);
    next = pattern.nextRun(next);
  }
  return ticks;
}
