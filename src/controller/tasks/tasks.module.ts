import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DispatchersModule } from '../dispatchers/dispatchers.module';
import { EventsModule } from '../events/events.module';
import { SkillsModule } from '../skills/skills.module';
import { ConcurrencyAdmission } from '../scheduling/concurrency-admission';
import { QueueClaim } from '../scheduling/queue-claim';
import { SupersededCancels } from '../scheduling/superseded-cancels';
import { CallbackAuthenticator, CallbackAuthGuard } from './callback-auth.guard';
import { CallbackTokenStrategy } from './callback-token.strategy';
import { DispatchLoop } from './dispatch-loop';
import { DispatcherClient } from './dispatcher-client';
import { TaskCallbacksService } from './task-callbacks.service';
import { TaskLogsService } from './task-logs.service';
import { TaskDispatchService } from './task-dispatch.service';
import { TaskHotRoutes } from './task-hot-routes';
import { TaskWakeups } from './task-wakeups';
import { EarlyBriefs } from './early-briefs';
import { TasksController } from './tasks.controller';
import { Task } from './tasks.entity';
import { TasksRepository } from './tasks.repository';
import { TasksService } from './tasks.service';
import { TaskAttemptsRepository } from '../scheduling/task-attempts.repository';
import { TaskAttemptsService } from '../scheduling/task-attempts.service';
import { TaskRetriesService } from '../scheduling/task-retries.service';

@Module({
  imports: [TypeOrmModule.forFeature([Task]), DispatchersModule, SkillsModule, EventsModule],
  controllers: [TasksController],
  providers: [
    TasksRepository, TasksService, TaskDispatchService, TaskCallbacksService, CallbackAuthenticator, CallbackTokenStrategy, CallbackAuthGuard,
    TaskWakeups, EarlyBriefs, DispatchLoop, DispatcherClient, TaskHotRoutes, TaskLogsService,
    QueueClaim, ConcurrencyAdmission, SupersededCancels,
    TaskAttemptsRepository, TaskRetriesService, TaskAttemptsService,
  ],
  exports: [TasksService, TasksRepository, TaskAttemptsService],
})
export class TasksModule {}
