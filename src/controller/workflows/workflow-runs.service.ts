import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { KeysetRequest } from '../../shared/database/keyset-page';
import { CursorPage, toCursorPage } from '../../shared/http/page';
import { TaskAttemptsService } from '../scheduling/task-attempts.service';
import { TaskView } from '../tasks/task-view';
import { TasksService } from '../tasks/tasks.service';
import { WorkflowsService } from './workflows.service';

/** The tasks a workflow created, newest first, shown as GET /tasks/ shows them. */
@Injectable()
export class WorkflowRunsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly workflows: WorkflowsService,
    private readonly tasks: TasksService,
    private readonly attempts: TaskAttemptsService,
  ) {}

  async list(workflowId: string, request: KeysetRequest): Promise<CursorPage<TaskView>> {
    await this.workflows.get(workflowId);
    const page = await this.tasks.list({ ...request, workflow: workflowId });
    return toCursorPage(page, await this.attempts.views(page.items), request, {
      baseUrl: this.config.publicUrl,
      path: `/api/v1/workflows/${encodeURIComponent(workflowId)}/runs/`,
    });
  }
}
