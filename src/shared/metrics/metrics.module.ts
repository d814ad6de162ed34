import { DynamicModule, Module, Type } from '@nestjs/common';
import { MetricsRole } from './metrics';
import { METRICS_ROLE, MetricsController } from './metrics.controller';

/** `GET /metrics` for one role, with the providers that register the role's scrape-time gauges. */
@Module({})
export class MetricsModule {
  static forRole(role: MetricsRole, gauges: Type[]): DynamicModule {
    return {
      module: MetricsModule,
      controllers: [MetricsController],
      providers: [{ provide: METRICS_ROLE, useValue: role }, ...gauges],
    };
  }
}
