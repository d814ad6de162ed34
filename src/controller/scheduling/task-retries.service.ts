import { randomUUID } from 'node:crypto';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { deadLetters, taskRetries } from '../metrics/controller-metrics';
import { TaskWakeups } from '../tasks/task-wakeups';
import { Task, TaskStatus } from '../tasks/tasks.entity';
import { TaskPatch, TasksRepository, Transition } from '../tasks/tasks.repository';
import { AttemptEnding, classifyEnding, decideRetry, policyOf } from './retry-policy';
import { TaskAttemptsRepository } from './task-attempts.repository';

/** An ending as its source reports it, with what a final move would record. */
export interface EndingReport extends AttemptEnding {
  patch: TaskPatch;
  /** The states the task may be in for this ending to apply. */
  from: readonly TaskStatus[];
}

export type AttemptOutcome = Transition & { retried: boolean };

/**
 * The one retry decision (CONTRACT section 5 "Scheduling"): a failed or timed-out attempt,
 * whatever reported it (a dispatcher's callback, every dispatcher refusing the request, the
 * watchdog), either starts the task's next attempt after its backoff or ends the task, which
 * is then a dead letter.
 */
@Injectable()
export class TaskRetriesService {
  private readonly logger = new Logger('Retries');

  constructor(
    private readonly tasks: TasksRepository,
    private readonly attempts: TaskAttemptsRepository,
    /** Absent where the service is built by hand on a bare data source (no dispatch loop to wake). */
    @Optional() private readonly wakeups?: TaskWakeups,
  ) {}

  async endAttempt(task: Task, ending: EndingReport): Promise<AttemptOutcome> {
    const errorMessage = typeof ending.patch.errorMessage === 'string' ? ending.patch.errorMessage : (ending.errorMessage ?? null);
    const reason = classifyEnding({ ...ending, errorMessage });
    const decision = decideRetry(policyOf(task.retry), task.attempt, reason, task.cancelRequestedAt !== null);
    if (decision.retry) {
      const next = await this.attempts.retry({
        guid: task.guid, attempt: task.attempt, from: ending.from, status: ending.status, reason, errorMessage,
        delaySeconds: decision.delaySeconds, nextDispatcherTaskId: randomUUID(),
      });
      if (next) {
        taskRetries.inc({ reason });
        // The loop's timer would find it too; this wakes it when the backoff ends (every replica, by NOTIFY).
        setTimeout(() => this.wakeups?.taskStored(), Math.ceil(decision.delaySeconds * 1000) + 10).unref();
        this.logger.warn({ task: task.guid, attempt: task.attempt, reason, nextAttemptAt: next.nextDispatchAt }, 'Task attempt ended; it will be tried again');
        return { moved: true, task: next, retried: true };
      }
      return { moved: false, task: await this.tasks.findByGuid(task.guid), retried: false };
    }
    const closed = await this.tasks.transitionAttempt(task.guid, task.attempt, ending.status, { ...ending.patch, deadLetter: true }, { from: ending.from });
    if (closed.moved) deadLetters.inc({ reason });
    return { ...closed, retried: false };
  }

  /**
   * The watchdog: a dispatched or running task with no callback `graceSeconds` past its
   * deadline, a `timed_out` ending. Answers the tasks this call moved
   * (another replica's watchdog may take some of them first).
   */
  async timeOutOverdue(graceSeconds: number, errorMessage: string, limit = 500): Promise<AttemptOutcome[]> {
    const outcomes: AttemptOutcome[] = [];
    for (const task of await this.tasks.overdue(graceSeconds, limit)) {
      const outcome = await this.endAttempt(task, { status: 'timed_out', source: 'watchdog', patch: { errorMessage }, from: ['dispatched', 'running'] });
      if (outcome.moved) outcomes.push(outcome);
    }
    return outcomes;
  }
}
