import { Cron } from 'croner';

/**
 * Schedule triggers: a cron pattern read in an IANA time zone. Patterns are croner's:
 * five fields (minute first) or six (seconds first), names and nicknames such as `@daily`
 * allowed, day of month and day of week combined with OR when both are restricted (as
 * Vixie cron and Kubernetes CronJob do).
 */

export const SCHEDULE_SOURCE = 'schedule';
export const CATCH_UP_MODES = ['latest', 'none'] as const;
export type CatchUp = (typeof CATCH_UP_MODES)[number];
export const DEFAULT_TIME_ZONE = 'UTC';
export const MAX_CRON_LENGTH = 200;

export interface ScheduleTrigger {
  source: typeof SCHEDULE_SOURCE;
  cron: string;
  timezone: string;
  catch_up: CatchUp;
}

export function isScheduleTrigger(trigger: { source: string }): trigger is ScheduleTrigger {
  return trigger.source === SCHEDULE_SOURCE;
}

/** The trigger as stored: defaults filled in, nothing else kept. */
export function storedScheduleTrigger(trigger: { cron?: string; timezone?: string; catch_up?: string }): ScheduleTrigger {
  return {
    source: SCHEDULE_SOURCE,
    cron: (trigger.cron ?? '').trim(),
    timezone: trigger.timezone ?? DEFAULT_TIME_ZONE,
    catch_up: (trigger.catch_up as CatchUp | undefined) ?? 'latest',
  };
}

/** Why a time zone cannot be used, or null: an IANA name (`Europe/Berlin`, `UTC`), never an offset. */
export function timeZoneProblem(timezone: unknown): string | null {
  if (typeof timezone !== 'string' || timezone.length === 0 || timezone.length > 64) return 'must be an IANA time zone name such as UTC or Europe/Berlin';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return null;
  } catch {
    return `must be an IANA time zone name such as UTC or Europe/Berlin (not ${timezone})`;
  }
}

/** Why a pattern cannot be used, or null. */
export function cronProblem(cron: unknown): string | null {
  if (typeof cron !== 'string' || cron.trim().length === 0) return 'must be a cron pattern such as "0 3 * * *" or "*/10 * * * * *"';
  if (cron.length > MAX_CRON_LENGTH) return `must be at most ${MAX_CRON_LENGTH} characters`;
  let pattern: Cron;
  try {
    pattern = compile(cron, DEFAULT_TIME_ZONE);
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/^CronPattern:\s*/, '');
    return `must be a cron pattern of 5 fields (minute hour day month weekday) or 6 (seconds first): ${reason}`;
  }
  // A pattern such as "0 0 30 2 *" parses but never comes round.
  if (!pattern.nextRun(new Date())) return 'never matches a date (such as 30 February)';
  return null;
}

function compile(cron: string, timezone: string): Cron {
  return new Cron(cron.trim(), { timezone, mode: '5-or-6-parts' });
}

/** Compiled patterns by pattern and time zone; a handful per installation, so the cache is simply emptied past a bound. */
const compiled = new Map<string, Cron>();
const MAX_COMPILED = 1000;

export function cronOf(trigger: ScheduleTrigger): Cron {
  const key = `${trigger.timezone} ${trigger.cron}`;
  let pattern = compiled.get(key);
  if (!pattern) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    pattern = compile(trigger.cron, trigger.timezone);
    compiled.set(key, pattern);
  }
  return pattern;
}

/** The first tick strictly after `after`, across the triggers (null: none ever). */
export function nextTick(triggers: ScheduleTrigger[], after: Date): Date | null {
  let earliest: Date | null = null;
  for (const trigger of triggers) {
    const next = cronOf(trigger).nextRun(after);
    if (next && (!earliest || next < earliest)) earliest = next;
  }
  return earliest;
}

/** The next `count` tick times strictly after `after`, across the triggers, each time once. */
export function nextTicks(triggers: ScheduleTrigger[], after: Date, count: number): Date[] {
  const times = new Set<number>();
  for (const trigger of triggers) for (const time of cronOf(trigger).nextRuns(count, after)) times.add(time.getTime());
  return [...times].sort((a, b) => a - b).slice(0, count).map((time) => new Date(time));
}

/** The latest tick of one trigger strictly before `before` (null: none). */
export function tickBefore(trigger: ScheduleTrigger, before: Date): Date | null {
  return cronOf(trigger).previousRuns(1, before)[0] ?? null;
}
