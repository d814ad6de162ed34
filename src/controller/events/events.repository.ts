import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EVENTS } from './event-sql';
import { EventKind } from './events.entity';

export interface EventRow {
  id: number;
  taskGuid: string | null;
  kind: EventKind;
  data: Record<string, unknown>;
  at: string;
}

/** Reads of the event log by id range, the dispatcher state announcements and the window's pruning. */
@Injectable()
export class EventsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Events after `after` up to `upTo`, in id order, at most `limit`; only one task's when `taskGuid` is given. */
  async range(after: number, upTo: number, limit: number, taskGuid?: string): Promise<EventRow[]> {
    const rows = (await this.db.query(
      `SELECT id, kind, task_guid, data, created_at FROM ${EVENTS}
       WHERE id > $1 AND id <= $2 AND ($4::uuid IS NULL OR task_guid = $4) ORDER BY id LIMIT $3`,
      [after, upTo, limit, taskGuid ?? null],
    )) as { id: string; kind: EventKind; task_guid: string | null; data: Record<string, unknown>; created_at: Date }[];
    return rows.map((row) => ({ id: Number(row.id), kind: row.kind, taskGuid: row.task_guid, data: row.data, at: new Date(row.created_at).toISOString() }));
  }

  /** The oldest id still kept (null: none), to tell a client that resumes from before it. */
  async oldestId(): Promise<number | null> {
    const [row] = (await this.db.query(`SELECT min(id) AS id FROM ${EVENTS}`)) as { id: string | null }[];
    return row.id === null ? null : Number(row.id);
  }

  /**
   * Announces each dispatcher whose state (from its last heartbeat, as `dispatcherState`
   * computes it) differs from the one last announced, in one statement: a replica that
   * loses the race for a row sees it announced already and skips it. Answers how many.
   */
  async announceDispatcherStates(): Promise<number> {
    const rows = (await this.db.query(
      `WITH computed AS (
         SELECT guid, CASE
           WHEN last_heartbeat_at IS NULL THEN 'offline'
           WHEN now() - last_heartbeat_at <= make_interval(secs => 2 * heartbeat_interval_seconds) THEN 'online'
           WHEN now() - last_heartbeat_at <= make_interval(secs => 5 * heartbeat_interval_seconds) THEN 'stale'
           ELSE 'offline' END AS state
         FROM "controller"."dispatchers"),
       changed AS (
         UPDATE "controller"."dispatchers" d SET reported_state = c.state FROM computed c
         WHERE d.guid = c.guid AND d.reported_state <> c.state
         RETURNING d.slug, d.name, d.reported_state, d.active_tasks, d.capacity)
       INSERT INTO ${EVENTS} (kind, data)
       SELECT 'dispatcher.state', jsonb_build_object('dispatcher_slug', slug, 'name', name, 'status', reported_state,
         'active_tasks', active_tasks, 'capacity', capacity) FROM changed
       RETURNING id`,
    )) as unknown[];
    return rows.length;
  }

  /** Deletes up to `limit` events older than `hours`, oldest first. */
  async deleteOlderThan(hours: number, limit: number): Promise<number> {
    const rows = (await this.db.query(
      `DELETE FROM ${EVENTS} WHERE id IN (
         SELECT id FROM ${EVENTS} WHERE created_at < now() - make_interval(secs => $1 * 3600) ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [hours, limit],
    )) as unknown[];
    return rows.length;
  }
}
