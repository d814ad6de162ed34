import { Injectable, Logger } from '@nestjs/common';
import { GroupCommit } from '../../shared/database/group-commit';
import { DomainError } from '../../shared/errors/domain-error';
import { taskAttributes } from '../../shared/tracing/task-attributes';
import { inSpan } from '../../shared/tracing/trace-context';
import { CallbackCaller } from './callback-auth.guard';
import { TaskRetriesService } from '../scheduling/task-retries.service';
import { decideCallback, finalStatusOfCallback, statusesBefore } from './task-state';
import { TaskCallbackDto, TaskProgressDto } from './tasks.dto';
import { TaskWakeups } from './task-wakeups';
import { Task, TaskStatus } from './tasks.entity';
import { CompletionAnswer, TaskPatch, TasksRepository, TokenCompletion } from './tasks.repository';

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
  /** Completions by the token's holder, group-committed: under load, one UPDATE for every completion that came while one was under way. */
  private readonly completions = new GroupCommit<TokenCompletion, CompletionAnswer>((items) => this.tasks.completeByTokens(items), { maxBatch: 128, maxInFlight: 2 });

  constructor(
    private readonly tasks: TasksRepository,
    private readonly wakeups: TaskWakeups,
    private readonly retries: TaskRetriesService,
  ) {}

  /**
   * Closes the task with the reported final state in one conditional statement. When the
   * task was final already, or became final meanwhile (another callback, the watchdog),
   * the same state is a duplicate and another one a conflict. A failed or timed-out report
   * goes through the retry decision: the task may be `pending` again for its next attempt.
   */
  callback(caller: CallbackCaller, body: TaskCallbackDto): Promise<CallbackAnswer> {
    const attributes = taskAttributes({ guid: caller.guid, status: body.status });
    return inSpan('close task', { attributes }, async (span) => {
      const answer = await this.closeReported(caller, body);
      span.setAttribute('task.status', answer.task_status);
      if (answer.duplicate) span.setAttribute('task.duplicate_callback', true);
      return answer;
    });
  }

  private async closeReported(caller: CallbackCaller, body: TaskCallbackDto): Promise<CallbackAnswer> {
    const outcome = {
      exitCode: body.exit_code ?? null,
      resultKey: body.result_key || null,
      resultMetadata: body.result_metadata ?? null,
      errorMessage: body.error_message || null,
    };
    const finished = (status: TaskStatus, pendingWaits?: boolean): CallbackAnswer => {
      this.logger.log({ task: caller.guid, status }, 'Task finished');
      // A slot of its dispatcher and its concurrency key is free: the queue may start the next task.
      this.wakeups.slotFreed(pendingWaits);
      return { status: 'ok', task_guid: caller.guid, task_status: status };
    };
    // The common case in one statement: a completion, and the token's hash in the WHERE
    // proves the caller (and that it reports the current attempt).
    if (caller.tokenHash && body.status === 'completed') {
      const completion = await this.completions.add({ guid: caller.guid, tokenHash: caller.tokenHash, outcome });
      if (completion.moved) return finished('completed', completion.pendingWaits);
    }
    const task = await caller.task();
    const reported = finalStatusOfCallback(body.status, body.result_metadata, task.cancelRequestedAt !== null);
    let current = task;
    if (decideCallback(current.status, reported).kind === 'apply') {
      const closed = await this.close(task, reported, outcome);
      if (closed.moved && closed.retried) {
        this.logger.log({ task: task.guid, attempt: task.attempt }, 'Task attempt ended; the task waits for its next one');
        this.wakeups.recheck();
        return { status: 'ok', task_guid: task.guid, task_status: 'pending' };
      }
      if (closed.moved) return finished(reported);
      current = closed.task ?? current;
      if (current.attempt !== task.attempt) {
        throw DomainError.conflict(`This report is for attempt ${task.attempt}; the task is on attempt ${current.attempt} now and keeps it.`, {
          attempt: task.attempt, current_attempt: current.attempt, status: current.status,
        });
      }
    }
    if (decideCallback(current.status, reported).kind === 'duplicate') {
      return { status: 'ok', task_guid: task.guid, task_status: current.status, duplicate: true };
    }
    throw DomainError.conflict(`The task is already ${current.status}; a ${reported} callback cannot change it.`, { status: current.status });
  }

  /** A final report of the task's current attempt: a failure or time-out may start the next attempt. */
  private close(task: Task, reported: TaskStatus, outcome: TaskPatch): Promise<{ moved: boolean; retried?: boolean; task: Task | null }> {
    if (reported === 'failed' || reported === 'timed_out') {
      return this.retries.endAttempt(task, { status: reported, source: 'callback', patch: outcome, from: statusesBefore(reported) });
    }
    return this.tasks.transitionAttempt(task.guid, task.attempt, reported, outcome);
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
    const moved = await this.tasks.transitionAttempt(task.guid, task.attempt, 'running', patch, { stay: true });
    if (!moved.moved) {
      const status = moved.task?.status ?? task.status;
      throw DomainError.conflict(`The task is already ${status}; progress is no longer kept.`, { status });
    }
    return kept;
  }
}
