import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subject } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { PgListener } from '../../shared/database/pg-listener';

/** The channel replicas tell each other on that tasks were stored. */
export const TASKS_PENDING_CHANNEL = 'controller_tasks_pending';
/** Other replicas hear of stored tasks at most this often from one process. */
const NOTIFY_EVERY_MS = 50;

/**
 * Wakes the dispatch loop when tasks are stored: at once in this process, and through
 * PostgreSQL LISTEN/NOTIFY when another replica stored them. The NOTIFY is sent after the
 * insert has committed, at most every NOTIFY_EVERY_MS, not inside the insert: a notifying
 * transaction holds a database-wide lock through its commit, which would queue every task
 * creation behind the one before it. The listener (PgListener) reconnects when its
 * connection drops, and the loop's timer covers the gap. The embedded database runs in this
 * process only, so there the in-process signal is all there is.
 */
@Injectable()
export class TaskWakeups implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly pending = new Subject<void>();
  private readonly logger = new Logger(TaskWakeups.name);
  private listener?: PgListener;
  private notifyTimer?: NodeJS.Timeout;
  /** Our own notifications come back to us; this tells them apart. */
  private readonly instance = randomUUID();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Tasks were stored (and committed) by this process. */
  taskStored(): void {
    this.pending.next();
    if (this.listener?.connected && !this.notifyTimer) {
      this.notifyTimer = setTimeout(() => void this.notifyOthers(), NOTIFY_EVERY_MS);
      this.notifyTimer.unref();
    }
  }

  private async notifyOthers(): Promise<void> {
    this.notifyTimer = undefined;
    try {
      await this.listener?.notify(this.instance);
    } catch (error) {
      // The other replicas' timers pick the tasks up; the listener reconnects on its own.
      this.logger.debug({ err: error }, 'Could not tell other replicas about stored tasks');
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.databaseEmbedded || !this.config.databaseUrl) return;
    // A notification from another replica, or a reconnect after which one may have been missed (no payload).
    this.listener = new PgListener(this.config.databaseUrl, TASKS_PENDING_CHANNEL, (payload) => {
      if (payload !== this.instance) this.pending.next();
    }, this.logger);
    await this.listener.start();
  }

  async onApplicationShutdown(): Promise<void> {
    clearTimeout(this.notifyTimer);
    await this.listener?.stop();
    this.pending.complete();
  }
}
