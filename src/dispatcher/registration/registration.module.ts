import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { PoolsModule } from '../pools/pools.module';
import { RegistrationService } from './registration.service';

@Module({
  imports: [TasksModule, PoolsModule],
  providers: [RegistrationService],
})
export class RegistrationModule {}
