import { Controller, Get, Inject } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { probe, SharedHealthIndicators } from '../../shared/health/health-indicators';
import { RUNTIME_BACKENDS, RuntimeBackend } from '../runtime/runtime';

/** Liveness (`/health`: the database) and readiness (`/ready`: database and each runtime backend). */
@ApiTags('probes')
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: SharedHealthIndicators,
    private readonly indicatorService: HealthIndicatorService,
    @Inject(RUNTIME_BACKENDS) private readonly backends: RuntimeBackend[],
  ) {}

  @Get('health')
  @HealthCheck()
  liveness(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.database()]);
  }

  @Get('ready')
  @HealthCheck()
  readiness(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.indicators.database(),
      ...this.backends.map((backend) => () => probe(this.indicatorService, `runtime_${backend.name}`, () => backend.ping())),
    ]);
  }
}
