import { Get } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { Answers } from '../http/openapi-decorators';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorFunction } from '@nestjs/terminus';
import { SharedHealthIndicators } from './health-indicators';

/**
 * The probes every role serves: `/livez` (the process answers; what the kubelet restarts
 * on, so no dependency is checked: a database failover must not restart every pod),
 * `/health` (the database answers) and `/ready` (the database and what the role adds in
 * `readinessChecks`).
 */
export abstract class ProbesController {
  protected constructor(
    protected readonly health: HealthCheckService,
    protected readonly indicators: SharedHealthIndicators,
  ) {}

  /** What else must answer before the role takes traffic. */
  protected abstract readinessChecks(): HealthIndicatorFunction[];

  @Get('livez')
  @ApiOperation({ summary: 'Liveness of the process alone: 200 while it runs, no dependency checked' })
  @Answers(200, { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } }, required: ['status'] }, 'The process answers')
  livez(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('health')
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness: 200 while the database answers, else 503' })
  liveness(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.database()]);
  }

  @Get('ready')
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: each dependency reported; any down: 503' })
  readiness(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.database(), ...this.readinessChecks()]);
  }
}
