import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { CACHE, Cache } from '../cache/cache';
import { OBJECT_STORAGE, ObjectStorage } from '../storage/object-storage';

/** Runs one check with a time limit and reports it in Terminus' shape. */
export async function probe(
  indicators: HealthIndicatorService,
  key: string,
  check: () => Promise<unknown>,
  timeoutMs = 3000,
): Promise<HealthIndicatorResult> {
  const indicator = indicators.check(key);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return indicator.up();
  } catch (error) {
    return indicator.down({ message: error instanceof Error ? error.message : String(error) });
  } finally {
    clearTimeout(timer);
  }
}

@Injectable()
export class SharedHealthIndicators {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    @Inject(CACHE) private readonly cache: Cache,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
  ) {}

  database(): Promise<HealthIndicatorResult> {
    return probe(this.indicators, 'database', () => this.dataSource.query('SELECT 1'));
  }

  cacheStore(): Promise<HealthIndicatorResult> {
    return probe(this.indicators, 'cache', () => this.cache.ping());
  }

  objectStorage(): Promise<HealthIndicatorResult> {
    return probe(this.indicators, 'object_storage', () => this.storage.ping());
  }
}
