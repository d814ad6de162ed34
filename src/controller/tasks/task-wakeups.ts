import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subject } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { ReplicaSignal } from '../../shared/database/replica-signal';

/** The channel replicas tell each other on that tasks were stored. */
export const TASKS_PENDING_CHANNEL = 'controller_tasks_pending';

/**
 * Wakes the dispatch loop when tasks are stored: at once in this process, and through
 * PostgreSQL LISTEN/NOTIFY (`ReplicaSignal`, sent after commit) when another replica
 * stored them. The loop's timer covers a notification lost while the listener reconnects;
 * with the embedded database the in-process signal is all there is.
 */
@Injectable()
export class TaskWakeups implements OnApplicationBootstrap, OnApplicationShutdown {
  /** A dispatch round is due: `true` when a task is known to wait (this process stored one, or a completion here saw one), `false` when one may have become claimable. */
  readonly pending = new Subject<boolean>();
  private readonly signal = new ReplicaSignal(TASKS_PENDING_CHANNEL, new Logger(TaskWakeups.name));

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Tasks were stored (and committed) by this process. */
  taskStored(): void {
    this.pending.next(true);
    this.signal.announce();
  }

  /**
   * A task ended, and its slot is free. `pendingWaits`, when the statement that ended it read
   * it: a pending task is due and unclaimed (this process's round claims without the probe), or
   * none is (no round, here or at another replica: a task stored later wakes one of its own,
   * the retry timer covers the rest).
   */
  slotFreed(pendingWaits?: boolean): void {
    if (pendingWaits === false) return;
    this.pending.next(pendingWaits === true);
    this.signal.announce();
  }

  /** A waiting task may be claimable now without a task stored: a slot was freed, a dispatcher came online. */
  recheck(): void {
    this.pending.next(false);
    this.signal.announce();
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.signal.start(this.config.databaseUrl, this.config.databaseEmbedded, () => this.pending.next(false));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.signal.stop();
    this.pending.complete();
  }
}
