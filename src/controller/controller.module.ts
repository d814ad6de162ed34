import { StreamSlotsModule } from '../shared/http/stream-slots';
import { EventsModule } from './events/events.module';
import { StreamLeasesModule } from './streams/stream-leases';
import { DynamicModule, Module, Type } from '@nestjs/common';
import { AppConfig } from '../shared/config/config';
import { ConfigModule } from '../shared/config/config.module';
import { CacheModule } from '../shared/cache/cache.module';
import { DatabaseModule } from '../shared/database/database.module';
import { MetricsModule } from '../shared/metrics/metrics.module';
import { HotRoute } from '../shared/http/hot-routes';
import { StorageModule } from '../shared/storage/storage.module';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { ControllerRetention } from './controller-retention';
import { DispatchersModule } from './dispatchers/dispatchers.module';
import { HealthModule } from './health/health.module';
import { ControllerGauges } from './metrics/controller-gauges';
import { QueueGauges } from './scheduling/queue-gauges';
import { OAuthModule } from './oauth/oauth.module';
import { SchedulesModule } from './schedules/schedules.module';
import { SkillsModule } from './skills/skills.module';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { TaskHotRoutes } from './tasks/task-hot-routes';
import { TasksModule } from './tasks/tasks.module';
import { WebhookHotRoutes } from './webhooks/webhook-hot-routes';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkflowsModule } from './workflows/workflows.module';

/**
 * The controller's feature modules, one per folder under src/controller/. Express tries
 * routes in the order they were registered, which is this order: the two that take the
 * most requests (webhook ingest, task callbacks and progress) come first.
 */
export const CONTROLLER_FEATURES: Type[] = [WebhooksModule, TasksModule, AuthModule, OAuthModule, HealthModule, DispatchersModule, SkillsModule, WorkflowsModule, EventsModule, SchedulesModule, SubscriptionsModule, AuditModule];

/** The providers of the controller's hot routes (see `mountHotRoutes`), webhook ingest first. */
export const CONTROLLER_HOT_ROUTES: Type<{ routes(): HotRoute[] }>[] = [WebhookHotRoutes, TaskHotRoutes];

/** Root module of the `controller` role. */
@Module({})
export class ControllerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ControllerModule,
      imports: [
        ConfigModule.forRoot(config),
        StreamSlotsModule,
        DatabaseModule.forRole('controller', config),
        StreamLeasesModule,
        CacheModule.forRoot(),
        StorageModule.forRoot(),
        ...CONTROLLER_FEATURES,
        MetricsModule.forRole('controller', [ControllerGauges, QueueGauges]),
      ],
      providers: [ControllerRetention],
    };
  }
}
