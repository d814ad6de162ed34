import { Module } from '@nestjs/common';
import { CallbackTokenBox } from './callback-token-box';
import { SharedLogFollows } from './shared-log-follows';
import { DispatcherTaskHotRoutes } from './task-hot-routes';
import { TaskLogs } from './task-logs';
import { TaskSignals } from './task-signals';
import { TasksController } from './tasks.controller';
import { TasksRepository } from './tasks.repository';
import { TasksService } from './tasks.service';

@Module({
  controllers: [TasksController],
  providers: [TasksRepository, TasksService, TaskSignals, CallbackTokenBox, TaskLogs, SharedLogFollows, DispatcherTaskHotRoutes],
  exports: [TasksRepository, TaskSignals, CallbackTokenBox, TaskLogs],
})
export class TasksModule {}
