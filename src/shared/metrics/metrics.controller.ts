import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { MetricsRole, processMetricsRole, processRegistry, roleRegistry } from './metrics';

export const METRICS_ROLE = Symbol('METRICS_ROLE');

/** `GET /metrics`: this role's series, and the process's on one port of the process. */
@ApiExcludeController()
@Controller('metrics')
export class MetricsController {
  constructor(
    @Inject(METRICS_ROLE) private readonly role: MetricsRole,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  @Header('Content-Type', processRegistry.contentType)
  @Header('Cache-Control', 'no-store')
  async metrics(): Promise<string> {
    const registries = [roleRegistry(this.role)];
    if (processMetricsRole(this.config.role) === this.role) registries.push(processRegistry);
    return (await Promise.all(registries.map((registry) => registry.metrics()))).join('');
  }
}
