import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { SchedulerService } from './scheduler.service';

@Module({
  imports: [TasksModule],
  providers: [SchedulerService],
})
export class SchedulerModule {}
