import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../shared/errors/domain-error';
import { decideCallback, finalStatusOfCallback } from './task-state';
import { TaskCallbackDto, TaskProgressDto } from './tasks.dto';
import { Task, TaskStatus } from './tasks.entity';
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

  constructor(private readonly tasks: TasksRepository) {}

  /**
   * Closes the task with the reported final state in one conditional statement. When the
   * task was final already, or became final meanwhile (another callback, the watchdog),
   * the same state is a duplicate and another one a conflict.
   */
  async callback(task: Task, body: TaskCallbackDto): Promise<CallbackAnswer> {
    const reported = finalStatusOfCallback(body.status, body.result_metadata, task.cancelRequestedAt !== null);
    let current = task;
    if (decideCallback(current.status, reported).kind === 'apply') {
      const closed = await this.tasks.transition(task.guid, reported, {
        exitCode: body.exit_code ?? null,
        resultKey: body.result_key || null,
        resultMetadata: body.result_metadata ?? null,
        errorMessage: body.error_message || null,
      });
      if (closed.moved) {
        this.logger.log({ task: task.guid, status: reported }, 'Task finished');
        return { status: 'ok', task_guid: task.guid, task_status: reported };
      }
      current = closed.task ?? current;
    }
    if (decideCallback(current.status, reported).kind === 'duplicate') {
      return { status: 'ok', task_guid: task.guid, task_status: current.status, duplicate: true };
    }
    throw DomainError.conflict(`The task is already ${current.status}; a ${reported} callback cannot change it.`, { status: current.status });
  }

  /** Keeps the latest progress; the first report moves a pending or dispatched task to `running`. */
  async progress(task: Task, body: TaskProgressDto): Promise<CallbackAnswer> {
    const progress = {
      percentage: body.percentage ?? null,
      message: body.message ?? null,
      data: body.data ?? null,
      updated_at: new Date().toISOString(),
    };
    const kept = await this.tasks.transition(task.guid, 'running', { progress, startedAt: () => 'COALESCE(started_at, now())' }, { stay: true });
    if (!kept.moved) {
      const status = kept.task?.status ?? task.status;
      throw DomainError.conflict(`The task is already ${status}; progress is no longer kept.`, { status });
    }
    return { status: 'ok', task_guid: task.guid, task_status: 'running' };
  }
}
