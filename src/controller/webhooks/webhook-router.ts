import { Injectable, Logger } from '@nestjs/common';
import { GroupCommit } from '../../shared/database/group-commit';
import { byShape } from '../../shared/database/statements';
import { DomainError } from '../../shared/errors/domain-error';
import { TaskConcurrency, workflowConcurrency } from '../scheduling/concurrency';
import { TaskTemplateDto } from '../tasks/tasks.dto';
import { Task } from '../tasks/tasks.entity';
import { TasksService, TaskTemplateInput } from '../tasks/tasks.service';
import { fillBrief, pickWorkflow, WebhookEvent } from '../workflows/workflow-routing';
import { Workflow } from '../workflows/workflows.entity';
import { WorkflowsService } from '../workflows/workflows.service';
import { countDelivery, DeliveryLedger } from './delivery-ledger';
import { WebhookDelivery } from './webhook-delivery.entity';

/** A routed delivery's ledger row and its task, stored together or not at all. */
interface RoutedRows {
  delivery: Partial<WebhookDelivery>;
  task: Partial<Task> & { guid: string };
}

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

  /**
   * Records a new delivery once, with its final outcome: ignored in one INSERT; routed in
   * one statement with its task (the task is inserted only if the ledger row was). Answers null when the ledger already holds its dedup key.
   */
  async accept(row: Partial<WebhookDelivery> & { id: string }, workflow: Workflow | null, event: WebhookEvent): Promise<RoutedAnswer | null> {
    if (!workflow) {
      if (!(await this.ledger.recordOnce({ ...row, outcome: 'ignored', statusCode: 202 }))) return null;
      return { status: 202, body: { status: 'ignored', routed_to: null } };
    }
    let stored: boolean;
    let taskGuid: string;
    let values: Awaited<ReturnType<TasksService['prepareTask']>>;
    try {
      values = await this.tasks.prepareTask(await this.templateFor(workflow, event), { workflowId: workflow.id, deliveryId: row.id, ...queueOrigin(workflow, event) });
      taskGuid = values.guid;
      const delivery = { ...row, outcome: 'routed' as const, statusCode: 200, taskGuid };
      stored = await this.tasks.storeTraced(values, (task) => this.routed.add({ delivery, task }));
    } catch (error) {
      // The failed delivery is kept without its dedup key, so the sender's retry is routed again.
      const reason = error instanceof Error ? error.message : String(error);
      await this.ledger
        .recordOnce({ ...row, dedupKey: null, outcome: 'failed', statusCode: 503, error: `task creation failed: ${reason}` })
        .catch(() => undefined);
      throw this.unstored(row.id, workflow, error);
    }
    if (!stored) return null;
    countDelivery({ source: row.source, outcome: 'routed' });
    await this.tasks.admitStored(values);
    return { status: 200, body: { status: 'ok', routed_to: workflow.id, task_guid: taskGuid } };
  }

  /** Routed deliveries with their tasks, group-committed: under load, one statement for every delivery that came while one was under way. */
  private readonly routed = new GroupCommit<RoutedRows, boolean>((rows) => this.storeRouted(rows), { maxBatch: 128, maxInFlight: 2 });

  /**
   * Each delivery's ledger row and, if that was stored (its dedup key not taken), its task, in
   * one statement per shape of task (the tasks of one workflow share one).
   */
  private async storeRouted(rows: RoutedRows[]): Promise<boolean[]> {
    const stored = new Set<string>();
    await Promise.all(byShape(rows, (row) => row.task).map(async (group) => {
      const deliveries = this.ledger.insertManyOnce(group.map((row) => row.delivery));
      const tasks = await this.tasks.repository.insertManyAfter(group.map((row) => row.task), deliveries, `t."delivery_id" IN (SELECT id::text FROM precondition)`);
      for (const guid of tasks) stored.add(guid);
    }));
    return rows.map((row) => stored.has(row.task.guid));
  }

  /**
   * The task template of one delivery: the workflow's template, checked once per version of
   * the workflow (the routing cache hands out the same object until the workflow changes),
   * with the brief filled from this event.
   */
  private async templateFor(workflow: Workflow, event: WebhookEvent): Promise<TaskTemplateDto> {
    let checked = this.checkedTemplates.get(workflow);
    if (!checked) {
      checked = this.tasks.checkTemplate(taskInput(workflow, event));
      this.checkedTemplates.set(workflow, checked);
    }
    return Object.assign(new TaskTemplateDto(), await checked, { brief: taskInput(workflow, event).brief });
  }

  private readonly checkedTemplates = new WeakMap<Workflow, Promise<TaskTemplateDto>>();

  private unstored(deliveryId: string, workflow: Workflow, error: unknown): DomainError {
    const reason = error instanceof Error ? error.message : String(error);
    this.logger.error({ delivery: deliveryId, workflow: workflow.id, err: error }, 'The workflow task could not be created');
    const shown = error instanceof DomainError ? `: ${reason}` : '';
    return new DomainError(
      'unavailable',
      `The delivery matched workflow "${workflow.id}" but its task could not be created${shown}. Send it again to retry (delivery ${deliveryId}).`,
      { details: { delivery: deliveryId, routed_to: workflow.id } },
    );
  }

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
        ...queueOrigin(workflow, event),
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

/** The workflow's concurrency (its key filled from the event) and weight, for the task's place in the queue. */
function queueOrigin(workflow: Workflow, event: WebhookEvent): { concurrency: TaskConcurrency | null; weight: number } {
  return { concurrency: workflowConcurrency(workflow.concurrency, workflow.id, event.payload), weight: workflow.weight };
}

/** The workflow's template with the brief filled from the event (the event itself when it has none). */
export function taskInput(workflow: Workflow, event: WebhookEvent): TaskTemplateInput {
  const { brief, ...fields } = workflow.taskTemplate;
  const filled = brief === undefined ? { source: event.source, event: event.event, payload: event.payload } : fillBrief(brief, event.payload);
  return { ...fields, brief: filled, ...(workflow.retry ? { retry: workflow.retry } : {}) } as TaskTemplateInput;
}
