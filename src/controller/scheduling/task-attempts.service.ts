import { ADMISSION_HOLD_SECONDS } from './concurrency-admission';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DomainError } from '../../shared/errors/domain-error';
import { isFinal } from '../tasks/task-state';
import { AttemptView, taskView, TaskView } from '../tasks/task-view';
import { Task } from '../tasks/tasks.entity';
import { TasksService } from '../tasks/tasks.service';
import { dispatcherTaskIdOf } from './dispatcher-task-id';
import { TaskAttempt } from './task-attempt.entity';
import { TaskAttemptsRepository } from './task-attempts.repository';

/** A task's attempts and re-runs: the views that show them, and the re-run of a final task. */
@Injectable()
export class TaskAttemptsService {
  constructor(
    private readonly tasks: TasksService,
    private readonly attempts: TaskAttemptsRepository,
  ) {}

  /** The single-task view: the task with its re-runs and every attempt, the current one last. */
  async detail(guid: string): Promise<TaskView> {
    const task = await this.tasks.get(guid);
    const [ended, reruns] = await Promise.all([this.attempts.ofTask(task.guid), this.tasks.repository.rerunsOf([task.guid])]);
    return taskView(task, { reruns: reruns.get(task.guid) ?? [], attempts: [...ended.map(endedAttemptView), currentAttemptView(task)] });
  }

  /** List views: each task with its re-runs, read in one statement for the page. */
  async views(tasks: Task[]): Promise<TaskView[]> {
    const reruns = await this.tasks.repository.rerunsOf(tasks.map((task) => task.guid));
    return tasks.map((task) => taskView(task, { reruns: reruns.get(task.guid) ?? [] }));
  }

  /**
   * A new task from a final one's template and brief, linked both ways (`rerun_of`,
   * `reruns`); the original leaves the dead letters. 409 when the task is not final.
   */
  async rerun(guid: string, createdBy: string): Promise<TaskView> {
    const original = await this.tasks.get(guid);
    if (!isFinal(original.status)) {
      throw DomainError.conflict(`The task is ${original.status}; only a final task can be re-run.`, { status: original.status });
    }
    const values = { ...templateOf(original), ...(await this.briefOf(original)), createdBy };
    // A re-run is a new task of the request that asked for it: its own trace, not the original's.
    const rerun = await this.tasks.storeTraced(values, (traced) => this.tasks.repository.insertRerun(original.guid, traced));
    if (!rerun) throw DomainError.conflict('The task is not final; only a final task can be re-run.');
    await this.tasks.admitStored(rerun);
    return taskView(rerun);
  }

  /** An inline brief is copied (the original's object goes with the original); a brief named by key is named again. */
  private async briefOf(original: Task): Promise<Pick<Task, 'guid' | 'briefKey' | 'briefPending'>> {
    const guid = randomUUID();
    if (original.briefKey !== `briefs/${original.guid}.json`) return { guid, briefKey: original.briefKey, briefPending: null };
    const brief = await this.tasks.brief(original.guid).catch((error: unknown) => {
      if (error instanceof DomainError && error.code === 'not_found') throw DomainError.conflict('The brief of this task is no longer stored; it cannot be re-run.');
      throw error;
    });
    return { guid, briefKey: `briefs/${guid}.json`, briefPending: brief.body.toString('utf8') };
  }
}

/** The template fields a re-run takes over unchanged (skills stay pinned to the versions the original ran). */
function templateOf(task: Task): Partial<Task> {
  return {
    status: 'pending',
    agentImage: task.agentImage,
    runtimeTarget: task.runtimeTarget,
    resources: task.resources,
    env: task.env,
    secretEnv: task.secretEnv,
    ports: task.ports,
    skills: task.skills,
    timeoutSeconds: task.timeoutSeconds,
    runtimeClass: task.runtimeClass,
    network: task.network,
    security: task.security,
    podAdditions: task.podAdditions,
    dispatcherLabels: task.dispatcherLabels,
    requestedDispatcher: task.requestedDispatcher,
    workflowId: task.workflowId,
    deliveryId: task.deliveryId,
    retry: task.retry,
    priority: task.priority,
    concurrencyKey: task.concurrencyKey,
    concurrencyLimit: task.concurrencyLimit,
    concurrencyStrategy: task.concurrencyStrategy,
    // A cancelling strategy holds the re-run from the queue until its key's admission decides, as at creation.
    ...(task.concurrencyStrategy && task.concurrencyStrategy !== 'queue' ? { nextDispatchAt: new Date(Date.now() + ADMISSION_HOLD_SECONDS * 1000) } : {}),
    fairnessGroup: task.fairnessGroup,
    fairnessWeight: task.fairnessWeight,
  };
}

function endedAttemptView(attempt: TaskAttempt): AttemptView {
  return {
    attempt: attempt.attempt,
    dispatcher: attempt.dispatcherSlug,
    dispatcher_task_id: attempt.dispatcherTaskId,
    status: attempt.status,
    reason: attempt.reason,
    error_message: attempt.errorMessage,
    started_at: attempt.startedAt?.toISOString() ?? null,
    finished_at: attempt.finishedAt.toISOString(),
  };
}

function currentAttemptView(task: Task): AttemptView {
  return {
    attempt: task.attempt,
    dispatcher: task.dispatcherSlug,
    dispatcher_task_id: dispatcherTaskIdOf(task),
    status: task.status,
    reason: null,
    error_message: task.errorMessage,
    started_at: task.dispatchedAt?.toISOString() ?? null,
    finished_at: task.finishedAt?.toISOString() ?? null,
  };
}
