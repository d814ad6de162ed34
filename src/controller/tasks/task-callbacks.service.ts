import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../shared/errors/domain-error';
import { CallbackCaller } from './callback-auth.guard';
import { decideCallback, finalStatusOfCallback } from './task-state';
import { TaskCallbackDto, TaskProgressDto } from './tasks.dto';
import { TaskStatus } from './tasks.entity';
import { TaskWakeups } from './task-wakeups';
import { TasksRepository } from './tasks.repository';

export interface CallbackAnswer {
  status: 'ok';
  task_guid: string;
  task_status: TaskStatus;
  duplicate?: true;
}

/** The task callback and progress endpoints (CONTRACT "Task callback"), for an authenticated task. */
@Injectable()
export class TaskCallbacksService {
  private readonly logger = new Logger(TaskCallbacksService.name);

  constructor(
    private readonly tasks: TasksRepository,
    private readonly wakeups: TaskWakeups,
  ) {}

  /**
   * Closes the task with the reported final state in one conditional statement. When the
   * task was final already, or became final meanwhile (another callback, the watchdog),
   * the same state is a duplicate and another one a conflict.
   */
  async callback(caller: CallbackCaller, body: TaskCallbackDto): Promise<CallbackAnswer> {
    const outcome = {
      exitCode: body.exit_code ?? null,
      resultKey: body.result_key || null,
      resultMetadata: body.result_metadata ?? null,
      errorMessage: body.error_message || null,
    };
    const finished = (status: TaskStatus): CallbackAnswer => {
      this.logger.log({ task: caller.guid, status }, 'Task finished');
      // A slot of its dispatcher and its concurrency key is free: the queue may start the next task.
      this.wakeups.taskStored();
      return { status: 'ok', task_guid: caller.guid, task_status: status };
    };
    // The common case in one statement: the state a report means does not hang on a cancel
    // request, and the token's hash in the WHERE proves the caller.
    const reportedAsIs = finalStatusOfCallback(body.status, body.result_metadata, false);
    const hangsOnCancel = reportedAsIs !== finalStatusOfCallback(body.status, body.result_metadata, true);
    if (caller.tokenHash && !hangsOnCancel && (await this.tasks.transitionByToken(caller.guid, caller.tokenHash, reportedAsIs, outcome))) {
      return finished(reportedAsIs);
    }
    const task = await caller.task();
    const reported = finalStatusOfCallback(body.status, body.result_metadata, task.cancelRequestedAt !== null);
    let current = task;
    if (decideCallback(current.status, reported).kind === 'apply') {
      const closed = await this.tasks.transition(task.guid, reported, outcome);
      if (closed.moved) return finished(reported);
      current = closed.task ?? current;
    }
    if (decideCallback(current.status, reported).kind === 'duplicate') {
      return { status: 'ok', task_guid: task.guid, task_status: current.status, duplicate: true };
    }
    throw DomainError.conflict(`The task is already ${current.status}; a ${reported} callback cannot change it.`, { status: current.status });
  }

  /** Keeps the latest progress; the first report moves a pending or dispatched task to `running`. */
  async progress(caller: CallbackCaller, body: TaskProgressDto): Promise<CallbackAnswer> {
    const progress = {
      percentage: body.percentage ?? null,
      message: body.message ?? null,
      data: body.data ?? null,
      updated_at: new Date().toISOString(),
    };
    const patch = { progress, startedAt: () => 'COALESCE(started_at, now())' };
    const kept = { status: 'ok', task_guid: caller.guid, task_status: 'running' } as const;
    if (caller.tokenHash && (await this.tasks.transitionByToken(caller.guid, caller.tokenHash, 'running', patch, { stay: true }))) return kept;
    const task = await caller.task();
    const moved = await this.tasks.transition(task.guid, 'running', patch, { stay: true });
    if (!moved.moved) {
      const status = moved.task?.status ?? task.status;
      throw DomainError.conflict(`The task is already ${status}; progress is no longer kept.`, { status });
    }
    return kept;
  }
}
