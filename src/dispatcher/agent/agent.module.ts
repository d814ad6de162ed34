import { Module } from '@nestjs/common';
import { CallbacksModule } from '../callbacks/callbacks.module';
import { TasksModule } from '../tasks/tasks.module';
import { AgentAccess } from './agent-access';
import { AgentController } from './agent.controller';
import { AgentHotRoutes } from './agent-hot-routes';
import { AgentService } from './agent.service';

@Module({
  imports: [TasksModule, CallbacksModule],
  controllers: [AgentController],
  providers: [AgentService, AgentAccess, AgentHotRoutes],
})
export class AgentModule {}
