import { Module } from '@nestjs/common';
import { PoolClaims } from './pool-claims';
import { PoolGauges } from './pool-gauges';
import { PoolsController } from './pools.controller';
import { PoolsRepository } from './pools.repository';
import { PoolsService } from './pools.service';

/** Warm pools: agents started before their task, the claim they wait on, their metrics. */
@Module({
  controllers: [PoolsController],
  providers: [PoolsRepository, PoolClaims, PoolsService, PoolGauges],
  exports: [PoolsService, PoolsRepository],
})
export class PoolsModule {}
