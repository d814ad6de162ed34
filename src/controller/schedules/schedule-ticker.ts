import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { workflowConcurrency } from '../scheduling/concurrency';
import { TasksService, TaskTemplateInput } from '../tasks/tasks.service';
import { fillBrief } from '../workflows/workflow-routing';
import { Workflow } from '../workflows/workflows.entity';
import { WorkflowsService } from '../workflows/workflows.service';
import { dueTicks, MAX_TICKS_PER_ROUND, PlannedTick } from './schedule-plan';
import { ScheduleTicksRepository } from './schedule-ticks.repository';
import { isScheduleTrigger, nextTick, SCHEDULE_SOURCE } from './schedule-trigger';

/** The longest sleep between rounds, so a lost wake-up costs at most this much. */
const MAX_SLEEP_MS = 30_000;
/** Timers may fire a hair early; waking this much after a tick makes it due. */
const WAKE_MARGIN_MS = 3;
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Makes the tasks of workflow schedules. Runs in every controller replica: each round
 * reads the enabled workflows with a schedule and each one's latest tick, works out the
 * ticks each owes (schedule-plan.ts), stores each tick with its task in one statement whose
 * primary key lets exactly one replica win, then sleeps until the next tick of any
 * workflow, or until any replica changes a workflow (the routing cache's LISTEN).
 */
@Injectable()
export class ScheduleTicker implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ScheduleTicker.name);
  private readonly loop = new SerialLoop(() => this.round(), (error) => this.logger.error({ err: error }, 'Schedule round failed'));
  /** Ticks from this time on fell while this replica's ticker ran (older ones were missed). */
  private runningSince = new Date();
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private pruneDueAt = Date.now() + PRUNE_EVERY_MS;

  constructor(
    private readonly workflows: WorkflowsService,
    private readonly tasks: TasksService,
    private readonly ticks: ScheduleTicksRepository,
  ) {}

  onApplicationBootstrap(): void {
    this.runningSince = new Date();
    this.subscription = this.workflows.changes.subscribe(() => this.loop.kick());
    this.loop.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    this.subscription?.unsubscribe();
    clearTimeout(this.timer);
    await this.loop.stop();
    clearTimeout(this.timer);
  }

  private async round(): Promise<void> {
    clearTimeout(this.timer);
    const now = new Date();
    let wakeAt = now.getTime() + MAX_SLEEP_MS;
    try {
      const scheduled = await this.ticks.scheduledWorkflows();
      const lastTicks = await this.ticks.lastTicks(scheduled.map((workflow) => workflow.id));
      for (const workflow of scheduled) {
        const triggers = workflow.triggers.filter(isScheduleTrigger);
        const due = dueTicks(triggers, { since: workflow.updatedAt, lastTick: lastTicks.get(workflow.id) ?? null }, now, this.runningSince);
        await this.makeTicks(workflow, due);
        const next = due.length === MAX_TICKS_PER_ROUND ? now : nextTick(triggers, now);
        if (next) wakeAt = Math.min(wakeAt, next.getTime());
      }
      if (Date.now() >= this.pruneDueAt) {
        this.pruneDueAt = Date.now() + PRUNE_EVERY_MS;
        await this.ticks.prune();
      }
    } finally {
      this.sleepUntil(wakeAt);
    }
  }

  /** Stores each tick with its task; a tick another replica stored first is no task here. */
  private async makeTicks(workflow: Workflow, due: PlannedTick[]): Promise<void> {
    for (const tick of due) {
      try {
        // A tick has no payload: its concurrency key is the workflow's key as written, else the workflow id.
        const concurrency = workflowConcurrency(workflow.concurrency, workflow.id, {});
        const values = await this.tasks.prepareTask(scheduledTaskInput(workflow, tick), { workflowId: workflow.id, concurrency, weight: workflow.weight });
        // A tick's task starts a trace of its own (the ticker's round belongs to no request).
        const task = await this.tasks.storeTraced(values, (traced) => this.tasks.repository.insertAfter(traced, this.ticks.tickInsert(workflow.id, tick.time, values.guid)));
        if (task) await this.tasks.admitStored(values);
      } catch (error) {
        // One workflow's broken template (a skill deleted since) does not hold up the others.
        this.logger.warn({ err: error, workflow: workflow.id, tick: tick.time.toISOString() }, 'A scheduled task could not be created');
        return;
      }
    }
  }

  private sleepUntil(wakeAt: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.loop.kick(), Math.max(0, wakeAt - Date.now()) + WAKE_MARGIN_MS);
    this.timer.unref();
  }
}

/** The workflow's task template with the brief filled for this tick (the tick itself when the template has no brief). */
export function scheduledTaskInput(workflow: Workflow, tick: PlannedTick): TaskTemplateInput {
  const { brief, ...fields } = workflow.taskTemplate;
  const schedule = { time: tick.time.toISOString(), previous_time: tick.previousTime?.toISOString() ?? null };
  const filled = brief === undefined
    ? { source: SCHEDULE_SOURCE, schedule: { ...schedule, cron: tick.trigger.cron, timezone: tick.trigger.timezone } }
    : fillBrief(brief, null, schedule);
  return { ...fields, brief: filled, ...(workflow.retry ? { retry: workflow.retry } : {}) } as TaskTemplateInput;
}
