import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DispatchersModule } from '../dispatchers/dispatchers.module';
import { SkillsModule } from '../skills/skills.module';
import { DispatcherClient } from './dispatcher-client';
import { TaskCallbacksService } from './task-callbacks.service';
import { TaskDispatchService } from './task-dispatch.service';
import { TaskSweeper } from './task-sweeper';
import { TasksController } from './tasks.controller';
import { Task } from './tasks.entity';
import { TasksService } from './tasks.service';

@Module({
  imports: [TypeOrmModule.forFeature([Task]), DispatchersModule, SkillsModule],
  controllers: [TasksController],
  providers: [TasksService, TaskDispatchService, TaskCallbacksService, TaskSweeper, DispatcherClient],
  exports: [TasksService],
})
export class TasksModule {}
