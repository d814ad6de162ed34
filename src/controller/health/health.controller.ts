import { Controller } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheckService, HealthIndicatorFunction } from '@nestjs/terminus';
import { SharedHealthIndicators } from '../../shared/health/health-indicators';
import { ProbesController } from '../../shared/health/probes.controller';

/** Liveness (`/health/`: the database) and readiness (`/ready/`: database, cache, storage). */
@ApiTags('probes')
@Controller()
export class HealthController extends ProbesController {
  constructor(health: HealthCheckService, indicators: SharedHealthIndicators) {
    super(health, indicators);
  }

  protected readinessChecks(): HealthIndicatorFunction[] {
    return [() => this.indicators.cacheStore(), () => this.indicators.objectStorage()];
  }
}
