import type { Workflow } from '../workflows/workflows.entity';
import { isScheduleTrigger, nextTicks } from './schedule-trigger';

/** How many tick times a workflow's view lists. */
export const NEXT_RUNS_SHOWN = 5;

/** A scheduled workflow's next tick times (none while it is disabled); null for a workflow without a schedule. */
export function scheduledRuns(workflow: Pick<Workflow, 'enabled' | 'triggers'>, now = new Date()): Date[] | null {
  const schedules = workflow.triggers.filter(isScheduleTrigger);
  if (schedules.length === 0) return null;
  return workflow.enabled ? nextTicks(schedules, now, NEXT_RUNS_SHOWN) : [];
}
