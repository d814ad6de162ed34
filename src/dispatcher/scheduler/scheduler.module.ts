import { Module } from '@nestjs/common';
import { PoolsModule } from '../pools/pools.module';
import { TasksModule } from '../tasks/tasks.module';
import { SchedulerService } from './scheduler.service';

@Module({
  imports: [TasksModule, PoolsModule],
  providers: [SchedulerService],
})
export class SchedulerModule {}
