import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../shared/errors/domain-error';
import { TasksService, TaskTemplateInput } from '../tasks/tasks.service';
import { fillBrief, pickWorkflow, WebhookEvent } from '../workflows/workflow-routing';
import { Workflow } from '../workflows/workflows.entity';
import { WorkflowsService } from '../workflows/workflows.service';
import { DeliveryLedger } from './delivery-ledger';
import { WebhookDelivery } from './webhook-delivery.entity';

export interface RoutedAnswer {
  status: 200 | 202;
  body: { status: 'ok' | 'ignored'; routed_to: string | null; task_guid?: string };
}

/**
 * Routes a recorded delivery to the first matching workflow and creates its task. The
 * ledger row is finished either way; a task that cannot be created is a 503, so the
 * sender retries.
 */
@Injectable()
export class WebhookRouter {
  private readonly logger = new Logger(WebhookRouter.name);

  constructor(
    private readonly workflows: WorkflowsService,
    private readonly tasks: TasksService,
    private readonly ledger: DeliveryLedger,
  ) {}

  async match(event: WebhookEvent): Promise<Workflow | null> {
    return pickWorkflow(await this.workflows.routingCandidates(), event);
  }

  /** `linkTo` is the ledger id the task points back to (the first delivery, for a replay). */
  async run(
    row: WebhookDelivery,
    workflow: Workflow | null,
    event: WebhookEvent,
    origin: { linkTo: string; createdBy?: string },
  ): Promise<RoutedAnswer> {
    if (!workflow) {
      await this.ledger.finish(row.id, { outcome: 'ignored', statusCode: 202 });
      return { status: 202, body: { status: 'ignored', routed_to: null } };
    }
    let taskGuid: string;
    try {
      const task = await this.tasks.createTask(taskInput(workflow, event), {
        workflowId: workflow.id,
        deliveryId: origin.linkTo,
        createdBy: origin.createdBy,
      });
      taskGuid = task.guid;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.error({ delivery: row.id, workflow: workflow.id, err: error }, 'The workflow task could not be created');
      await this.ledger.finish(row.id, { outcome: 'failed', statusCode: 503, error: `task creation failed: ${reason}`, dedupKey: null });
      const shown = error instanceof DomainError ? `: ${reason}` : '';
      throw new DomainError(
        'unavailable',
        `The delivery matched workflow "${workflow.id}" but its task could not be created${shown}. Send it again to retry (delivery ${row.id}).`,
        { details: { delivery: row.id, routed_to: workflow.id } },
      );
    }
    await this.ledger.finish(row.id, { outcome: 'routed', statusCode: 200, taskGuid });
    return { status: 200, body: { status: 'ok', routed_to: workflow.id, task_guid: taskGuid } };
  }
}

/** The workflow's template with the brief filled from the event (the event itself when it has none). */
export function taskInput(workflow: Workflow, event: WebhookEvent): TaskTemplateInput {
  const { brief, ...fields } = workflow.taskTemplate;
  const filled = brief === undefined ? { source: event.source, event: event.event, payload: event.payload } : fillBrief(brief, event.payload);
  return { ...fields, brief: filled } as TaskTemplateInput;
}
