import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { roleRegistry } from '../../shared/metrics/metrics';
import { registerScrapeGauges, ScrapeSnapshot } from '../../shared/metrics/scrape-gauges';
import { TASK_STATUSES } from '../tasks/tasks.entity';

interface StatusRow {
  status: string;
  tasks: number;
  oldest_age: number | null;
}

/**
 * Tasks by state and the age of the oldest pending task, read at scrape time: one GROUP BY
 * on the (status, created_at) index, so every replica reports the cluster's figures.
 */
@Injectable()
export class ControllerGauges implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private unregister?: () => void;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit(): void {
    const snapshot = new ScrapeSnapshot<StatusRow[]>(() => this.db.query(
      `SELECT status, count(*)::int AS tasks, extract(epoch FROM now() - min(created_at))::float8 AS oldest_age
       FROM "controller"."tasks" GROUP BY status`,
    ));
    this.unregister = registerScrapeGauges(roleRegistry('controller'), snapshot, [
      {
        name: 'controller_tasks',
        help: 'Controller tasks by state (pending, dispatched, running and the final states), cluster-wide.',
        labelNames: ['status'],
        set: (gauge, rows) => {
          for (const status of TASK_STATUSES) gauge.set({ status }, 0);
          for (const row of rows) gauge.set({ status: row.status }, row.tasks);
        },
      },
      {
        name: 'controller_oldest_pending_task_age_seconds',
        help: 'Age of the oldest task waiting for a dispatcher (0 when none waits).',
        set: (gauge, rows) => gauge.set(rows.find((row) => row.status === 'pending')?.oldest_age ?? 0),
      },
    ], (error) => this.logger.warn({ err: error }, 'Task gauges could not be read'));
  }

  onApplicationShutdown(): void {
    this.unregister?.();
  }
}
