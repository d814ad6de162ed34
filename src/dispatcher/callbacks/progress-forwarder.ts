import { Injectable, Logger } from '@nestjs/common';
import { CallbackTokenBox } from '../tasks/callback-token-box';
import { isFinal } from '../tasks/task-state';
import { TaskEntity } from '../tasks/task.entity';
import { TasksRepository } from '../tasks/tasks.repository';
import { progressUrl } from './callback-body';
import { CallbackPoster } from './callback-poster';

const MIN_INTERVAL_MS = 1000;

interface Pending {
  lastSentAt: number;
  next?: { url: string; sealedToken: string; body: string };
  timer?: NodeJS.Timeout;
}

/**
 * Forwards agent progress to the controller, best effort: at most one report a second
 * per task, the latest one winning (the one held back is sent when the second is over,
 * unless the task has ended by then).
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

  forward(task: TaskEntity, progress: { percentage: number; message: string; data: Record<string, unknown> }): void {
    this.forgetIdle();
    const pending = this.byTask.get(task.taskId) ?? { lastSentAt: 0 };
    this.byTask.set(task.taskId, pending);
    pending.next = { url: progressUrl(task.callbackUrl, task.taskId), sealedToken: task.callbackTokenSealed, body: JSON.stringify(progress) };
    if (pending.timer) return;
    const wait = Math.max(0, pending.lastSentAt + MIN_INTERVAL_MS - Date.now());
    pending.timer = setTimeout(() => {
      this.send(task.taskId, pending).catch((error: unknown) => this.logger.debug({ taskId: task.taskId, err: error }, 'Progress not forwarded'));
    }, wait);
    pending.timer.unref();
  }

  private async send(taskId: string, pending: Pending): Promise<void> {
    const next = pending.next;
    pending.next = undefined;
    pending.lastSentAt = Date.now();
    pending.timer = undefined;
    if (!next) return;
    // A report held back past the task's end would reach the controller after its callback.
    const task = await this.tasks.findById(taskId);
    if (!task || isFinal(task.status)) return;
    const outcome = await this.poster.post(next.url, next.body, this.tokens.open(next.sealedToken));
    if (outcome.error) this.logger.debug({ taskId, error: outcome.error }, 'Progress not forwarded');
  }

  private forgetIdle(): void {
    const cutoff = Date.now() - 10 * MIN_INTERVAL_MS;
    for (const [taskId, pending] of this.byTask) {
      if (!pending.timer && pending.lastSentAt < cutoff) this.byTask.delete(taskId);
    }
  }
}
