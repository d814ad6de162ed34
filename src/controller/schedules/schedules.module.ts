import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { ScheduleTicker } from './schedule-ticker';
import { ScheduleTicksRepository } from './schedule-ticks.repository';

/** Workflow schedules: the ticker every controller replica runs, and the ledger of ticks. */
@Module({
  imports: [TasksModule, WorkflowsModule],
  providers: [ScheduleTicker, ScheduleTicksRepository],
})
export class SchedulesModule {}
