import picomatch from 'picomatch';

/**
 * The rules that turn an event into a workflow run: trigger matching by source, event
 * and payload filters, and filling the brief template from the payload.
 */

export type FilterValue = string | number | boolean | null;

/** A webhook trigger; a schedule trigger (no `event`) never matches an event. */
export interface WorkflowTrigger {
  source: string;
  event?: string;
  filter?: Record<string, FilterValue>;
}

export interface RoutableWorkflow {
  id: string;
  enabled: boolean;
  priority: number;
  createdAt: Date;
  triggers: WorkflowTrigger[];
}

export interface WebhookEvent {
  source: string;
  event: string;
  payload: unknown;
}

/** A dotted path: `repository.full_name`, `commits.0.id`. */
export const FILTER_PATH = /^[A-Za-z0-9_$@-]+(\.[A-Za-z0-9_$@-]+)*$/;
/** `{{payload}}` or `{{payload.a.b}}`, spaces inside the braces allowed. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const PAYLOAD_REF = /^payload(\.[A-Za-z0-9_$@-]+)*$/;
/** A schedule tick's own placeholders: `{{schedule.time}}`, `{{schedule.previous_time}}`. */
const SCHEDULE_REF = /^schedule\.(time|previous_time)$/;
const isReference = (ref: string) => PAYLOAD_REF.test(ref) || SCHEDULE_REF.test(ref);

/** What a schedule tick fills its brief with: RFC 3339 times in UTC. */
export interface ScheduleContext {
  time: string;
  previous_time: string | null;
}

/** The value at a dotted path, or undefined when any step is missing. */
export function valueAt(root: unknown, path: string): unknown {
  let current: unknown = root;
  for (const step of path.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, step)) {
      return undefined;
    }
    current = (current as Record<string, unknown>)[step];
  }
  return current;
}

/**
 * Payload values are text, not paths: `*` crosses `/` and dots (bash mode), a newline is
 * a character like any other, and every glob character except `*` is literal.
 */
const GLOB_OPTIONS: picomatch.PicomatchOptions = {
  bash: true,
  dot: true,
  posix: true,
  nonegate: true,
  noextglob: true,
  nobrace: true,
  flags: 's',
};
const GLOB_SPECIAL = /[\\?[\]{}()!+@^$.|]/g;

function globMatches(glob: string, text: string): boolean {
  const literalExceptStar = glob
    .split('*')
    .map((part) => part.replace(GLOB_SPECIAL, '\\$&'))
    .join('*');
  return picomatch.isMatch(text, literalExceptStar, GLOB_OPTIONS);
}

/**
 * One filter entry: `null` matches a null value; a string with `*` is a glob over the
 * value's text (`*` is a run of characters, `/` included; a glob matches only non-empty
 * text without `.` or `..` path segments); anything else matches a string, number or
 * boolean whose text is equal.
 */
export function filterMatches(payload: unknown, path: string, expected: FilterValue): boolean {
  const actual = valueAt(payload, path);
  if (expected === null) return actual === null;
  if (!['string', 'number', 'boolean'].includes(typeof actual)) return false;
  const text = String(actual);
  if (typeof expected === 'string' && expected.includes('*')) return globMatches(expected, text);
  return text === String(expected);
}

export function triggerMatches(trigger: WorkflowTrigger, event: WebhookEvent): boolean {
  if (trigger.event === undefined || trigger.source !== event.source || trigger.event !== event.event) return false;
  return Object.entries(trigger.filter ?? {}).every(([path, value]) => filterMatches(event.payload, path, value));
}

/** Enabled workflows, lowest priority number first, oldest first on ties; the first match wins. */
export function pickWorkflow<T extends RoutableWorkflow>(workflows: T[], event: WebhookEvent): T | null {
  const candidates = workflows
    .filter((workflow) => workflow.enabled)
    .sort((a, b) => a.priority - b.priority || a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  return candidates.find((workflow) => workflow.triggers.some((trigger) => triggerMatches(trigger, event))) ?? null;
}

/** Every placeholder of a brief template that is not `payload`, `payload.<path>`, `schedule.time` or `schedule.previous_time`. */
export function badPlaceholders(template: unknown): string[] {
  const bad: string[] = [];
  walkStrings(template, (text) => {
    for (const match of text.matchAll(PLACEHOLDER)) if (!isReference(match[1])) bad.push(match[0]);
    return text;
  });
  return bad;
}

/**
 * Fills `{{payload.x.y}}` placeholders, and `{{schedule.time}}` / `{{schedule.previous_time}}`
 * for a schedule tick. A string that is exactly one placeholder takes the value itself (an
 * object stays an object); inside longer text a value is written as text (objects as JSON).
 * A missing value is null on its own, empty inside text.
 */
export function fillBrief(template: unknown, payload: unknown, schedule?: ScheduleContext): unknown {
  const lookup = (ref: string): unknown => {
    if (SCHEDULE_REF.test(ref)) return schedule ? valueAt(schedule, ref.slice('schedule.'.length)) : undefined;
    return ref === 'payload' ? payload : valueAt(payload, ref.slice('payload.'.length));
  };
  return walkStrings(template, (text) => {
    const whole = /^\{\{\s*([^{}]*?)\s*\}\}$/.exec(text);
    if (whole && isReference(whole[1])) return lookup(whole[1]) ?? null;
    return text.replace(PLACEHOLDER, (placeholder, ref: string) => {
      if (!isReference(ref)) return placeholder;
      const value = lookup(ref);
      if (value === undefined || value === null) return '';
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    });
  });
}

function walkStrings(value: unknown, visit: (text: string) => unknown): unknown {
  if (typeof value === 'string') return visit(value);
  if (Array.isArray(value)) return value.map((item) => walkStrings(item, visit));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walkStrings(item, visit)]));
  }
  return value;
}
