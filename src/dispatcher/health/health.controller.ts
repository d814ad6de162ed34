import { Controller, Inject } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheckService, HealthIndicatorFunction, HealthIndicatorService } from '@nestjs/terminus';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { probe, SharedHealthIndicators } from '../../shared/health/health-indicators';
import { ProbesController } from '../../shared/health/probes.controller';
import { RUNTIME_BACKENDS, RuntimeBackend } from '../runtime/runtime';
import { OutageGrace } from './outage-grace';
import { PoolsRepository } from '../pools/pools.repository';

/**
 * `/livez` (the process), `/health` (the database) and readiness (`/ready`: database and
 * each runtime backend; the Kubernetes API may be away for KUBE_API_OUTAGE_GRACE_SECONDS,
 * reported as `up` with an `outage` sentence).
 */
@ApiTags('probes')
@Controller()
export class HealthController extends ProbesController {
  private readonly graces = new Map<string, OutageGrace>();

  constructor(
    health: HealthCheckService,
    indicators: SharedHealthIndicators,
    private readonly indicatorService: HealthIndicatorService,
    @Inject(RUNTIME_BACKENDS) private readonly backends: RuntimeBackend[],
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly poolAgents: PoolsRepository,
  ) {
    super(health, indicators);
    this.graces.set('kubernetes', new OutageGrace(config.kubernetes.apiOutageGraceSeconds));
  }

  protected readinessChecks(): HealthIndicatorFunction[] {
    const checks: HealthIndicatorFunction[] = this.backends.map((backend) => () => this.backendCheck(backend));
    return this.config.warmPools.length > 0 ? [...checks, () => this.poolsCheck()] : checks;
  }

  /** Each warm pool's size and idle agents; a pool short of agents is reported, never unready (its tasks start cold). */
  private async poolsCheck() {
    const indicator = this.indicatorService.check('warm_pools');
    try {
      const counts = await this.poolAgents.counts();
      const pools = Object.fromEntries(this.config.warmPools.map((pool) => [pool.name, { size: pool.size, idle: counts.find((row) => row.pool === pool.name)?.idle ?? 0 }]));
      return indicator.up({ pools });
    } catch (error) {
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    }
  }

  private async backendCheck(backend: RuntimeBackend) {
    const key = `runtime_${backend.name}`;
    const grace = this.graces.get(backend.name);
    if (!grace) return probe(this.indicatorService, key, () => backend.ping());
    let outage: string | undefined;
    const result = await probe(this.indicatorService, key, async () => ({ outage } = await grace.check(() => backend.ping())));
    return outage && result[key]?.status === 'up' ? { [key]: { status: 'up' as const, outage } } : result;
  }
}
