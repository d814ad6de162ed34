import { EventKind } from './events.entity';

export const EVENTS = '"controller"."events"';

/**
 * An INSERT of one event per row of `source` (a CTE of task rows), for a statement that
 * changes tasks to write its events in the same statement: they commit together or not at
 * all. `kind` is one of the fixed kinds, never input.
 */
export function taskEventsInsert(kind: EventKind, source: string): string {
  return `INSERT INTO ${EVENTS} (kind, task_guid, data)
    SELECT '${kind}', s.guid, jsonb_build_object('task_guid', s.guid, 'status', s.status, 'workflow', s.workflow_id,
      'dispatcher_slug', s.dispatcher_slug, 'agent_image', s.agent_image, 'progress', s.progress, 'error_message', s.error_message,
      'updated_at', s.updated_at)
    FROM ${source} s`;
}

/** The event a move to `to` is: a final state, a progress report (a patch with progress), or another status. */
export function kindOfMove(final: boolean, withProgress: boolean): EventKind {
  if (final) return 'task.finished';
  return withProgress ? 'task.progress' : 'task.status';
}
