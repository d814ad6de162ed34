import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { CACHE, Cache } from './cache';
import { MemoryCache } from './memory-cache';
import { RedisCache } from './redis-cache';

/** Picks the cache implementation from config: Redis when REDIS_URL is set, else memory. */
export async function createCache(config: Pick<AppConfig, 'redisUrl' | 'cachePrefix'>): Promise<Cache> {
  if (!config.redisUrl) return new MemoryCache(config.cachePrefix);
  const cache = new RedisCache(config.redisUrl, config.cachePrefix);
  // A Redis that is down at boot must not stop the boot: /ready/ reports it instead.
  await cache.connect().catch(() => undefined);
  return cache;
}

@Global()
@Module({})
export class CacheModule implements OnApplicationShutdown {
  constructor(@Inject(CACHE) private readonly cache: Cache) {}

  static forRoot(): DynamicModule {
    return {
      module: CacheModule,
      providers: [{ provide: CACHE, inject: [APP_CONFIG], useFactory: (config: AppConfig) => createCache(config) }],
      exports: [CACHE],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.cache.close();
  }
}
