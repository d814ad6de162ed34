import { Get } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorFunction } from '@nestjs/terminus';
import { SharedHealthIndicators } from './health-indicators';

/**
 * The two probes every role serves: liveness (`/health`: the database answers) and
 * readiness (`/ready`: the database and what the role adds in `readinessChecks`).
 */
export abstract class ProbesController {
  protected constructor(
    protected readonly health: HealthCheckService,
    protected readonly indicators: SharedHealthIndicators,
  ) {}

  /** What else must answer before the role takes traffic. */
  protected abstract readinessChecks(): HealthIndicatorFunction[];

  @Get('health')
  @HealthCheck()
  liveness(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.database()]);
  }

  @Get('ready')
  @HealthCheck()
  readiness(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.database(), ...this.readinessChecks()]);
  }
}
