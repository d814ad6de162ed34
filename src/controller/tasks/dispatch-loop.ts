import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { TaskDispatchService } from './task-dispatch.service';
import { TaskWakeups } from './task-wakeups';
import { TasksRepository } from './tasks.repository';

/**
 * The controller's dispatch loop. Woken at once when a task is stored (here, or by another
 * replica through LISTEN/NOTIFY) and every TASK_DISPATCH_RETRY_SECONDS otherwise, each round
 * runs the watchdog when it is due, then claims pending tasks in batches (FOR UPDATE SKIP
 * LOCKED, so replicas share the work) and sends them until none is due.
 */
@Injectable()
export class DispatchLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DispatchLoop.name);
  private readonly loop = new SerialLoop(() => this.round(), (error) => this.logger.error({ err: error }, 'Dispatch round failed'));
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private watchdogDueAt = 0;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly dispatch: TaskDispatchService,
    private readonly wakeups: TaskWakeups,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.subscription = this.wakeups.pending.subscribe(() => this.loop.kick());
    this.timer = setInterval(() => this.loop.kick(), this.config.taskDispatchRetrySeconds * 1000);
    this.timer.unref();
    this.loop.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
    await this.loop.stop();
  }

  /** Runs a round now and waits for it (and for a round already running). */
  runOnce(): Promise<void> {
    return this.loop.kickAndWait();
  }

  private async round(): Promise<void> {
    if (Date.now() >= this.watchdogDueAt) {
      this.watchdogDueAt = Date.now() + this.config.taskDispatchRetrySeconds * 1000;
      await this.timeOutSilentTasks();
    }
    const size = this.config.dispatchBatchSize;
    for (;;) {
      const batch = await this.tasks.claimPending(size, this.config.dispatchClaimLeaseSeconds);
      if (batch.length === 0) return;
      try {
        await this.dispatch.dispatchBatch(batch);
      } finally {
        await this.tasks.releaseClaims(batch.map((task) => task.guid));
      }
      if (batch.length < size) return;
    }
  }

  /** Tasks with no final callback a grace period after their deadline become `timed_out`. */
  private async timeOutSilentTasks(): Promise<void> {
    const grace = this.config.taskWatchdogGraceSeconds;
    const timedOut = await this.tasks.timeOutOverdue(grace, `No callback came from the dispatcher within ${grace} s after the task's deadline.`);
    if (timedOut.length > 0) this.logger.warn({ tasks: timedOut.map((task) => task.guid) }, 'Tasks timed out without a callback');
  }
}
