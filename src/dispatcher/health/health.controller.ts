import { Controller, Inject } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheckService, HealthIndicatorFunction, HealthIndicatorService } from '@nestjs/terminus';
import { probe, SharedHealthIndicators } from '../../shared/health/health-indicators';
import { ProbesController } from '../../shared/health/probes.controller';
import { RUNTIME_BACKENDS, RuntimeBackend } from '../runtime/runtime';

/** Liveness (`/health`: the database) and readiness (`/ready`: database and each runtime backend). */
@ApiTags('probes')
@Controller()
export class HealthController extends ProbesController {
  constructor(
    health: HealthCheckService,
    indicators: SharedHealthIndicators,
    private readonly indicatorService: HealthIndicatorService,
    @Inject(RUNTIME_BACKENDS) private readonly backends: RuntimeBackend[],
  ) {
    super(health, indicators);
  }

  protected readinessChecks(): HealthIndicatorFunction[] {
    return this.backends.map((backend) => () => probe(this.indicatorService, `runtime_${backend.name}`, () => backend.ping()));
  }
}
