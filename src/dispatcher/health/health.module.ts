import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { SharedHealthIndicators } from '../../shared/health/health-indicators';
import { HealthController } from './health.controller';
import { PoolsModule } from '../pools/pools.module';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json', logger: false }), PoolsModule],
  controllers: [HealthController],
  providers: [SharedHealthIndicators],
})
export class HealthModule {}
