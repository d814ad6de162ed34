import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { SharedHealthIndicators } from '../../shared/health/health-indicators';

/** Liveness (`/health/`: the database) and readiness (`/ready/`: database, cache, storage). */
@ApiTags('probes')
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: SharedHealthIndicators,
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
      () => this.indicators.cacheStore(),
      () => this.indicators.objectStorage(),
    ]);
  }
}
