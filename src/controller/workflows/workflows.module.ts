import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TasksModule } from '../tasks/tasks.module';
import { WorkflowRoutingCache } from './workflow-routing-cache';
import { WorkflowRunsService } from './workflow-runs.service';
import { WorkflowsController } from './workflows.controller';
import { Workflow } from './workflows.entity';
import { WorkflowsService } from './workflows.service';

@Module({
  imports: [TypeOrmModule.forFeature([Workflow]), TasksModule],
  controllers: [WorkflowsController],
  providers: [WorkflowsService, WorkflowRunsService, WorkflowRoutingCache],
  exports: [WorkflowsService],
})
export class WorkflowsModule {}
