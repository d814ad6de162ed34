import { fillBrief } from '../workflows/workflow-routing';
import type { ConcurrencyStrategy } from '../tasks/tasks.entity';

/** A workflow's or a task's `concurrency` as stored: the key is still a template for a workflow. */
export interface StoredConcurrency {
  key?: string;
  limit: number;
  strategy: ConcurrencyStrategy;
}

/** What one task is held to: its rendered key, the limit and the strategy (CONTRACT 5, "Scheduling"). */
export interface TaskConcurrency {
  key: string;
  limit: number;
  strategy: ConcurrencyStrategy;
}

/** The longest key kept; a longer rendering is cut (the key is compared, never parsed). */
const MAX_KEY_LENGTH = 500;

/**
 * A workflow task's concurrency: the key template filled from the event's payload as a
 * brief is (`{{payload.repository.full_name}}`); absent, or empty once filled, the workflow id.
 */
export function workflowConcurrency(concurrency: StoredConcurrency | null, workflowId: string, payload: unknown): TaskConcurrency | null {
  if (!concurrency) return null;
  const filled = concurrency.key === undefined ? '' : keyText(fillBrief(concurrency.key, payload));
  return { key: (filled || workflowId).slice(0, MAX_KEY_LENGTH), limit: concurrency.limit, strategy: concurrency.strategy };
}

/**
 * A task posted to POST /tasks/: its key as given (there is no payload to fill it from), else
 * its workflow's id; a task with neither has no concurrency.
 */
export function postedConcurrency(concurrency: StoredConcurrency | undefined, workflowId: string | undefined): TaskConcurrency | null {
  const key = concurrency?.key || workflowId;
  if (!concurrency || !key) return null;
  return { key: key.slice(0, MAX_KEY_LENGTH), limit: concurrency.limit, strategy: concurrency.strategy };
}

/**
 * The group a task takes turns in among tasks of its priority (item 3): its concurrency key,
 * else its workflow, else whoever created it.
 */
export function fairnessGroupOf(concurrency: TaskConcurrency | null, workflowId: string | null, createdBy: string | null): string {
  if (concurrency) return `key:${concurrency.key}`;
  if (workflowId) return `workflow:${workflowId}`;
  return createdBy ? `creator:${createdBy}` : '';
}

/** The text a fairness group is shown by (metrics, waiting reasons). */
export function fairnessGroupLabel(group: string): string {
  return group === '' ? '(none)' : group;
}

function keyText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
