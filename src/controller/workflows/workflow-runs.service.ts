import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { Page, PageRequest, toPage } from '../../shared/http/page';
import { taskView, TaskView } from '../tasks/task-view';
import { TasksService } from '../tasks/tasks.service';
import { WorkflowsService } from './workflows.service';

/** The tasks a workflow created, newest first, shown as GET /tasks/ shows them. */
@Injectable()
export class WorkflowRunsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly workflows: WorkflowsService,
    private readonly tasks: TasksService,
  ) {}

  async list(workflowId: string, page: PageRequest): Promise<Page<TaskView>> {
    await this.workflows.get(workflowId);
    const { count, results } = await this.tasks.list({ ...page, workflow: workflowId });
    return toPage(results.map(taskView), count, page, {
      baseUrl: this.config.publicUrl,
      path: `/api/v1/workflows/${encodeURIComponent(workflowId)}/runs/`,
    });
  }
}
