import { Module } from '@nestjs/common';
import { CallbackTokenBox } from './callback-token-box';
import { TaskSignals } from './task-signals';
import { TasksController } from './tasks.controller';
import { TasksRepository } from './tasks.repository';
import { TasksService } from './tasks.service';

@Module({
  controllers: [TasksController],
  providers: [TasksRepository, TasksService, TaskSignals, CallbackTokenBox],
  exports: [TasksRepository, TaskSignals, CallbackTokenBox],
})
export class TasksModule {}
