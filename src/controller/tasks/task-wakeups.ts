import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { Subject } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';

/** The channel replicas tell each other on that tasks were stored. */
export const TASKS_PENDING_CHANNEL = 'controller_tasks_pending';
const RECONNECT_MS = [500, 1000, 2000, 5000];
/** Other replicas hear of stored tasks at most this often from one process. */
const NOTIFY_EVERY_MS = 50;

/**
 * Wakes the dispatch loop when tasks are stored: at once in this process, and through
 * PostgreSQL LISTEN/NOTIFY when another replica stored them. The NOTIFY is sent after the
 * insert has committed, at most every NOTIFY_EVERY_MS, not inside the insert: a notifying
 * transaction holds a database-wide lock through its commit, which would queue every task
 * creation behind the one before it. The listener is one plain `pg` connection of its own
 * (a pooled one cannot hold LISTEN); when it drops it reconnects with backoff, and the
 * loop's timer covers the gap. The embedded database runs in this process only, so there
 * the in-process signal is all there is.
 */
@Injectable()
export class TaskWakeups implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly pending = new Subject<void>();
  private readonly logger = new Logger(TaskWakeups.name);
  private client?: Client;
  private stopped = false;
  private attempt = 0;
  private notifyTimer?: NodeJS.Timeout;
  /** Our own notifications come back to us; this tells them apart. */
  private readonly instance = randomUUID();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Tasks were stored (and committed) by this process. */
  taskStored(): void {
    this.pending.next();
    if (this.client && !this.notifyTimer) {
      this.notifyTimer = setTimeout(() => void this.notifyOthers(), NOTIFY_EVERY_MS);
      this.notifyTimer.unref();
    }
  }

  private async notifyOthers(): Promise<void> {
    this.notifyTimer = undefined;
    try {
      await this.client?.query('SELECT pg_notify($1, $2)', [TASKS_PENDING_CHANNEL, this.instance]);
    } catch (error) {
      // The other replicas' timers pick the tasks up; the listener reconnects on its own.
      this.logger.debug({ err: error }, 'Could not tell other replicas about stored tasks');
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.databaseEmbedded || !this.config.databaseUrl) return;
    await this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.notifyTimer);
    await this.client?.end().catch(() => undefined);
    this.pending.complete();
  }

  private async listen(): Promise<void> {
    const client = new Client({ connectionString: this.config.databaseUrl!, application_name: 'agent-tasks-controller-listen' });
    client.on('notification', (message) => {
      if (message.payload !== this.instance) this.pending.next();
    });
    client.on('error', (error) => this.logger.warn({ err: error }, 'The task wake-up listener lost its connection'));
    client.on('end', () => this.reconnect(client));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${TASKS_PENDING_CHANNEL}`);
      this.attempt = 0;
      // Tasks stored while the listener was away are due now.
      this.pending.next();
    } catch (error) {
      this.logger.warn({ err: error }, 'The task wake-up listener could not connect; the dispatch loop polls meanwhile');
      await client.end().catch(() => undefined);
      this.reconnect(client);
    }
  }

  /** Once per lost connection: `end` and a failed connect may both report the same one. */
  private reconnect(client: Client): void {
    if (this.stopped || client !== this.client) return;
    this.client = undefined;
    const delay = RECONNECT_MS[Math.min(this.attempt++, RECONNECT_MS.length - 1)];
    setTimeout(() => void this.listen(), delay).unref();
  }
}
