import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { CallbackTokenBox } from '../tasks/callback-token-box';
import { isFinal } from '../tasks/task-state';
import { TaskEntity } from '../tasks/task.entity';
import { TasksRepository } from '../tasks/tasks.repository';
import { progressUrl } from './callback-body';
import { CallbackPoster } from './callback-poster';

const MIN_INTERVAL_MS = 1000;

interface Report {
  url: string;
  sealedToken: string;
  body: string;
}

interface Pending {
  lastSentAt: number;
  next?: Report;
  timer?: NodeJS.Timeout;
  /** The report being posted now: the final callback waits for it. */
  sending?: Promise<void>;
}

/**
 * Forwards agent progress to the controller, best effort: at most one report a second
 * per task, the latest one winning. The one held back is sent when the second is over;
 * once the task has ended it waits for the final callback instead, which sends it first
 * (`settle`), so the controller sees the last report and sees it before the callback.
 */
@Injectable()
export class ProgressForwarder {
  private readonly logger = new Logger('Progress');
  private readonly byTask = new Map<string, Pending>();

  constructor(
    private readonly poster: CallbackPoster,
    private readonly tokens: CallbackTokenBox,
    private readonly tasks: TasksRepository,
  ) {}

  /** `task`: as the statement that recorded the report on it (while it was live) returned it. */
  forward(task: TaskEntity, progress: { percentage: number; message: string; data: Record<string, unknown> }): void {
    this.forgetIdle();
    const pending = this.byTask.get(task.taskId) ?? { lastSentAt: 0 };
    this.byTask.set(task.taskId, pending);
    pending.next = { url: progressUrl(task.callbackUrl, task.taskId), sealedToken: task.callbackTokenSealed, body: JSON.stringify(progress) };
    if (pending.timer) return;
    const wait = this.waitOf(pending);
    pending.timer = setTimeout(() => {
      pending.timer = undefined;
      // The send is decided now: a report that comes while the task is read waits its second
      // from here, not from the report before (it would otherwise go at once, right after).
      const previous = pending.lastSentAt;
      pending.lastSentAt = Date.now();
      // A report that goes at once follows the statement that recorded it on the live task:
      // only one held back for its second reads whether the task has ended meanwhile.
      const sending = (wait === 0 ? this.send(task.taskId, pending) : this.sendWhileRunning(task.taskId, pending, previous)).finally(() => {
        if (pending.sending === sending) pending.sending = undefined;
      });
      pending.sending = sending;
    }, wait);
    pending.timer.unref();
  }

  /**
   * Called before a task's final callback is posted: sends the report still held back
   * (when its second is over, never sooner) and waits for any report being posted.
   */
  async settle(taskId: string): Promise<void> {
    const pending = this.byTask.get(taskId);
    if (!pending) return;
    clearTimeout(pending.timer);
    pending.timer = undefined;
    await pending.sending;
    if (pending.next) {
      await sleep(this.waitOf(pending));
      await this.send(taskId, pending);
    }
    this.byTask.delete(taskId);
  }

  /** A report due after the task's end is left for `settle`, so it cannot follow the callback. */
  private async sendWhileRunning(taskId: string, pending: Pending, lastSentAt: number): Promise<void> {
    const task = await this.tasks.findById(taskId).catch(() => null);
    if (!task || isFinal(task.status)) {
      pending.lastSentAt = lastSentAt;
      return;
    }
    await this.send(taskId, pending);
  }

  private async send(taskId: string, pending: Pending): Promise<void> {
    const next = pending.next;
    pending.next = undefined;
    pending.lastSentAt = Date.now();
    if (!next) return;
    try {
      const outcome = await this.poster.post(next.url, next.body, this.tokens.open(next.sealedToken));
      if (outcome.error) this.logger.debug({ taskId, error: outcome.error }, 'Progress not forwarded');
    } catch (error) {
      this.logger.debug({ taskId, err: error }, 'Progress not forwarded');
    }
  }

  private waitOf(pending: Pending): number {
    return Math.max(0, pending.lastSentAt + MIN_INTERVAL_MS - Date.now());
  }

  /** Drops tasks with nothing waiting, being sent or held back for `settle`. */
  private forgetIdle(): void {
    const cutoff = Date.now() - 10 * MIN_INTERVAL_MS;
    for (const [taskId, pending] of this.byTask) {
      if (!pending.timer && !pending.sending && !pending.next && pending.lastSentAt < cutoff) this.byTask.delete(taskId);
    }
  }
}
