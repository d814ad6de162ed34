import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { roleRegistry } from '../../shared/metrics/metrics';
import { registerScrapeGauges, ScrapeSnapshot } from '../../shared/metrics/scrape-gauges';
import { fairnessGroupLabel } from './concurrency';

/** Groups shown by name; the rest are summed under `other`, so a flood of keys cannot flood the label set. */
export const TOP_GROUPS = 10;
export const OTHER_GROUP = 'other';

interface GroupRow {
  fairness_group: string;
  pending: number;
  oldest_wait: number;
}

/**
 * Pending tasks and the oldest wait per fairness group (issue 21, item 7), read at scrape
 * time from the pending part of the queue: the TOP_GROUPS groups with most pending tasks by
 * name, the others as `other` (their count summed, their oldest wait the largest).
 */
@Injectable()
export class QueueGauges implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private unregister?: () => void;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit(): void {
    const snapshot = new ScrapeSnapshot<GroupRow[]>(() => this.db.query(
      `SELECT fairness_group, count(*)::int AS pending, extract(epoch FROM now() - min(created_at))::float8 AS oldest_wait
       FROM "controller"."tasks" WHERE status = 'pending' GROUP BY fairness_group`,
    ));
    this.unregister = registerScrapeGauges(roleRegistry('controller'), snapshot, [
      {
        name: 'controller_queue_pending_tasks',
        help: `Pending tasks per fairness group (the ${TOP_GROUPS} largest by name, the rest as "${OTHER_GROUP}"), cluster-wide.`,
        labelNames: ['group'],
        set: (gauge, rows) => {
          gauge.reset();
          for (const [group, row] of bounded(rows)) gauge.set({ group }, row.pending);
        },
      },
      {
        name: 'controller_queue_oldest_wait_seconds',
        help: 'Age of the oldest pending task per fairness group (same groups as controller_queue_pending_tasks).',
        labelNames: ['group'],
        set: (gauge, rows) => {
          gauge.reset();
          for (const [group, row] of bounded(rows)) gauge.set({ group }, row.oldest_wait);
        },
      },
    ], (error) => this.logger.warn({ err: error }, 'Queue gauges could not be read'));
  }

  onApplicationShutdown(): void {
    this.unregister?.();
  }
}

/** The largest groups by name and the rest folded into `other`. */
export function bounded(rows: GroupRow[]): Map<string, { pending: number; oldest_wait: number }> {
  const sorted = [...rows].sort((a, b) => b.pending - a.pending || a.fairness_group.localeCompare(b.fairness_group));
  const shown = new Map<string, { pending: number; oldest_wait: number }>();
  for (const row of sorted.slice(0, TOP_GROUPS)) shown.set(fairnessGroupLabel(row.fairness_group), { pending: row.pending, oldest_wait: row.oldest_wait });
  for (const row of sorted.slice(TOP_GROUPS)) {
    const other = shown.get(OTHER_GROUP) ?? { pending: 0, oldest_wait: 0 };
    shown.set(OTHER_GROUP, { pending: other.pending + row.pending, oldest_wait: Math.max(other.oldest_wait, row.oldest_wait) });
  }
  return shown;
}
