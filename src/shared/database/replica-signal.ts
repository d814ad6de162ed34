import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { PgListener } from './pg-listener';
import { outsideTraces } from '../tracing/trace-context';

/** Other replicas hear of one process's writes at most this often. */
const NOTIFY_EVERY_MS = 50;

/**
 * "Something was written" between replicas over one LISTEN/NOTIFY channel. `announce()` is
 * called after a commit, never inside the transaction: a notifying transaction holds a
 * database-wide lock through its commit, which would queue every write behind the one
 * before it. Announcements are coalesced to one NOTIFY per NOTIFY_EVERY_MS; our own come
 * back to us and are told apart by this process's id. `onOther` also runs after a
 * reconnect, when a notification may have been missed. Without a server of its own (the
 * embedded database runs in this process only) it stays silent.
 */
export class ReplicaSignal {
  private readonly instance = randomUUID();
  private listener?: PgListener;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  async start(databaseUrl: string | null, embedded: boolean, onOther: () => void): Promise<void> {
    if (embedded || !databaseUrl) return;
    this.listener = new PgListener(databaseUrl, this.channel, (payload) => {
      if (payload !== this.instance) onOther();
    }, this.logger);
    await this.listener.start();
  }

  announce(): void {
    if (!this.listener?.connected || this.timer) return;
    // One notification for every write of the period: not part of the trace of the write that set the timer.
    this.timer = outsideTraces(() => setTimeout(() => void this.notify(), NOTIFY_EVERY_MS));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.listener?.stop();
  }

  private async notify(): Promise<void> {
    this.timer = undefined;
    // Other replicas' timers cover a lost notification; the listener reconnects on its own.
    await this.listener?.notify(this.instance).catch((error: unknown) => this.logger.debug({ err: error }, `Could not notify ${this.channel}`));
  }
}
