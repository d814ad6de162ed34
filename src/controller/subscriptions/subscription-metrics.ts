import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter } from 'prom-client';
import { DataSource } from 'typeorm';
import { roleRegistry } from '../../shared/metrics/metrics';
import { registerScrapeGauges, ScrapeSnapshot } from '../../shared/metrics/scrape-gauges';

/** Attempts made by this process, by outcome (`delivered`: a 2xx; `failed`: anything else). */
export const subscriptionAttempts = new Counter({
  name: 'controller_subscription_attempts_total',
  help: 'Outbound event delivery attempts made by this process, by outcome (delivered: a 2xx answer; failed: any other answer, an error or no answer in 15 s).',
  labelNames: ['outcome'],
  registers: [roleRegistry('controller')],
});

interface SubscriptionRow {
  id: string;
  enabled: boolean;
  pending: number;
  failed: number;
  oldest_age: number | null;
}

/** Per-subscription outbox figures read at scrape time, so every replica reports the cluster's. */
@Injectable()
export class SubscriptionGauges implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private unregister?: () => void;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit(): void {
    const snapshot = new ScrapeSnapshot<SubscriptionRow[]>(() => this.db.query(
      `SELECT s.id, s.enabled,
         (SELECT count(*)::int FROM "controller"."subscription_deliveries" d WHERE d.subscription_id = s.id AND d.state = 'pending') AS pending,
         (SELECT count(*)::int FROM "controller"."subscription_deliveries" d WHERE d.subscription_id = s.id AND d.state = 'failed') AS failed,
         (SELECT extract(epoch FROM now() - min(d.created_at))::float8 FROM "controller"."subscription_deliveries" d
            WHERE d.subscription_id = s.id AND d.state = 'pending') AS oldest_age
       FROM "controller"."subscriptions" s`,
    ));
    this.unregister = registerScrapeGauges(roleRegistry('controller'), snapshot, [
      {
        name: 'controller_subscription_oldest_undelivered_age_seconds',
        help: 'Age of the oldest event not yet delivered, per subscription (0 when none waits).',
        labelNames: ['subscription'],
        set: (gauge, rows) => { for (const row of rows) gauge.set({ subscription: row.id }, row.oldest_age ?? 0); },
      },
      {
        name: 'controller_subscription_pending_deliveries',
        help: 'Deliveries waiting for an attempt or a retry, per subscription.',
        labelNames: ['subscription'],
        set: (gauge, rows) => { for (const row of rows) gauge.set({ subscription: row.id }, row.pending); },
      },
      {
        name: 'controller_subscription_failed_deliveries',
        help: 'Deliveries whose every retry failed (replay sends them again), per subscription.',
        labelNames: ['subscription'],
        set: (gauge, rows) => { for (const row of rows) gauge.set({ subscription: row.id }, row.failed); },
      },
      {
        name: 'controller_subscriptions_disabled',
        help: 'Subscriptions that are disabled (by an operator, a 410 answer or 5 days of failures).',
        set: (gauge, rows) => gauge.set(rows.filter((row) => !row.enabled).length),
      },
    ], (error) => this.logger.warn({ err: error }, 'Subscription gauges could not be read'));
  }

  onApplicationShutdown(): void {
    this.unregister?.();
  }
}
