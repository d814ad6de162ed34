import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { createRuntimeBackends } from './runtime.factory';
import { RUNTIME_BACKENDS, RuntimeBackend } from './runtime';
import { RuntimeRegistry } from './runtime-registry';

@Global()
@Module({
  providers: [
    { provide: RUNTIME_BACKENDS, inject: [APP_CONFIG], useFactory: (config: AppConfig) => createRuntimeBackends(config) },
    RuntimeRegistry,
  ],
  exports: [RUNTIME_BACKENDS, RuntimeRegistry],
})
export class RuntimeModule implements OnApplicationShutdown {
  constructor(@Inject(RUNTIME_BACKENDS) private readonly backends: RuntimeBackend[]) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.backends.map((backend) => backend.close()));
  }
}
