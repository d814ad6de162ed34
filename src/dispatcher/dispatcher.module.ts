import { StreamSlotsModule } from '../shared/http/stream-slots';
import { DynamicModule, Module, Type } from '@nestjs/common';
import { AppConfig } from '../shared/config/config';
import { ConfigModule } from '../shared/config/config.module';
import { CacheModule } from '../shared/cache/cache.module';
import { DatabaseModule } from '../shared/database/database.module';
import { MetricsModule } from '../shared/metrics/metrics.module';
import { StorageModule } from '../shared/storage/storage.module';
import { HotRoute } from '../shared/http/hot-routes';
import { AgentModule } from './agent/agent.module';
import { AgentHotRoutes } from './agent/agent-hot-routes';
import { DispatcherAuthModule } from './auth/auth.module';
import { CallbacksModule } from './callbacks/callbacks.module';
import { DispatcherRetention } from './dispatcher-retention';
import { HealthModule } from './health/health.module';
import { DispatcherGauges } from './metrics/dispatcher-gauges';
import { PoolsModule } from './pools/pools.module';
import { RegistrationModule } from './registration/registration.module';
import { ReplicasModule } from './replicas/replicas.module';
import { RuntimeModule } from './runtime/runtime.module';
import { SchedulerModule } from './scheduler/scheduler.module';
import { DispatcherTaskHotRoutes } from './tasks/task-hot-routes';
import { TasksModule } from './tasks/tasks.module';

/** The providers of the dispatcher's hot routes (see `serveHotRoutesFirst`): the agent protocol and the task intake. */
export const DISPATCHER_HOT_ROUTES: Type<{ routes(): HotRoute[] }>[] = [AgentHotRoutes, DispatcherTaskHotRoutes];

/** The dispatcher's feature modules, one per folder under src/dispatcher/. */
export const DISPATCHER_FEATURES: Type[] = [DispatcherAuthModule, RuntimeModule, HealthModule, TasksModule, AgentModule, CallbacksModule, ReplicasModule, PoolsModule, SchedulerModule, RegistrationModule];

/** Root module of the `dispatcher` role. */
@Module({})
export class DispatcherModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DispatcherModule,
      imports: [
        ConfigModule.forRoot(config),
        StreamSlotsModule,
        DatabaseModule.forRole('dispatcher', config),
        CacheModule.forRoot(),
        StorageModule.forRoot(),
        ...DISPATCHER_FEATURES,
        MetricsModule.forRole('dispatcher', [DispatcherGauges]),
      ],
      providers: [DispatcherRetention],
    };
  }
}
