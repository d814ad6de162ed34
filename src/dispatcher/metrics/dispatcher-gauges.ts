import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { roleRegistry } from '../../shared/metrics/metrics';
import { registerScrapeGauges, ScrapeSnapshot } from '../../shared/metrics/scrape-gauges';
import { TASK_STATUSES } from '../tasks/task-state';

interface Snapshot {
  tasks: { status: string; tasks: number; oldest_age: number | null }[];
  outbox: { depth: number; oldest_age: number | null };
}

/**
 * Tasks by state, the oldest pending task and the callback outbox, read at scrape time
 * (a GROUP BY on the (status, created_at) index, and the outbox's pending rows through its
 * partial index), so every replica reports the cluster's figures.
 */
@Injectable()
export class DispatcherGauges implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private unregister?: () => void;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit(): void {
    const snapshot = new ScrapeSnapshot<Snapshot>(() => this.read());
    this.unregister = registerScrapeGauges(roleRegistry('dispatcher'), snapshot, [
      {
        name: 'dispatcher_tasks',
        help: 'Dispatcher tasks by state (pending, starting, running and the final states), cluster-wide.',
        labelNames: ['status'],
        set: (gauge, { tasks }) => {
          for (const status of TASK_STATUSES) gauge.set({ status }, 0);
          for (const row of tasks) gauge.set({ status: row.status }, row.tasks);
        },
      },
      {
        name: 'dispatcher_oldest_pending_task_age_seconds',
        help: 'Age of the oldest task waiting for a free slot to start (0 when none waits).',
        set: (gauge, { tasks }) => gauge.set(tasks.find((row) => row.status === 'pending')?.oldest_age ?? 0),
      },
      {
        name: 'dispatcher_callback_outbox_depth',
        help: 'Final callbacks not yet delivered to the controller (pending in the outbox).',
        set: (gauge, { outbox }) => gauge.set(outbox.depth),
      },
      {
        name: 'dispatcher_callback_oldest_undelivered_age_seconds',
        help: 'Age of the oldest final callback not yet delivered (0 when none waits).',
        set: (gauge, { outbox }) => gauge.set(outbox.oldest_age ?? 0),
      },
    ], (error) => this.logger.warn({ err: error }, 'Dispatcher gauges could not be read'));
  }

  onApplicationShutdown(): void {
    this.unregister?.();
  }

  private async read(): Promise<Snapshot> {
    const age = 'extract(epoch FROM now() - min(created_at))::float8';
    const [tasks, [outbox]] = await Promise.all([
      this.db.query(`SELECT status, count(*)::int AS tasks, ${age} AS oldest_age FROM "dispatcher"."tasks" GROUP BY status`),
      this.db.query(`SELECT count(*)::int AS depth, ${age} AS oldest_age FROM "dispatcher"."callback_outbox" WHERE state = 'pending'`),
    ]);
    return { tasks, outbox };
  }
}
