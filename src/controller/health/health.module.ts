import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { SharedHealthIndicators } from '../../shared/health/health-indicators';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json', logger: false })],
  controllers: [HealthController],
  providers: [SharedHealthIndicators],
})
export class HealthModule {}
