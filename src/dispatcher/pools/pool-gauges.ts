import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { roleRegistry } from '../../shared/metrics/metrics';
import { registerScrapeGauges, ScrapeSnapshot } from '../../shared/metrics/scrape-gauges';
import { PoolCount, PoolsRepository } from './pools.repository';

/** Each pool's size and its idle and claimed agents, cluster-wide, read at scrape time. */
@Injectable()
export class PoolGauges implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private unregister?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: PoolsRepository,
  ) {}

  onModuleInit(): void {
    if (this.config.warmPools.length === 0) return;
    const pools = this.config.warmPools;
    const countOf = (counts: PoolCount[], pool: string) => counts.find((row) => row.pool === pool);
    const snapshot = new ScrapeSnapshot<PoolCount[]>(() => this.agents.counts());
    this.unregister = registerScrapeGauges(roleRegistry('dispatcher'), snapshot, [
      {
        name: 'dispatcher_pool_size',
        help: 'The size a warm pool is kept at (WARM_POOLS), by pool.',
        labelNames: ['pool'],
        set: (gauge) => pools.forEach((pool) => gauge.set({ pool: pool.name }, pool.size)),
      },
      {
        name: 'dispatcher_pool_idle_agents',
        help: 'Agents of a warm pool waiting for a task, by pool.',
        labelNames: ['pool'],
        set: (gauge, counts) => pools.forEach((pool) => gauge.set({ pool: pool.name }, countOf(counts, pool.name)?.idle ?? 0)),
      },
      {
        name: 'dispatcher_pool_claimed_agents',
        help: 'Agents of a warm pool running the task given to them, by pool.',
        labelNames: ['pool'],
        set: (gauge, counts) => pools.forEach((pool) => gauge.set({ pool: pool.name }, countOf(counts, pool.name)?.claimed ?? 0)),
      },
    ], (error) => this.logger.warn({ err: error }, 'Pool gauges could not be read'));
  }

  onApplicationShutdown(): void {
    this.unregister?.();
  }
}
