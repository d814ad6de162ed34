import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { PgListener } from './pg-listener';
import { outsideTraces } from '../tracing/trace-context';

/** Other replicas hear of one process's writes at most this often. */
const NOTIFY_EVERY_MS = 50;

/** How long a process that found no other listener sends nothing before it looks again. */
const ALONE_RECHECK_MS = 1_000;

/**
 * "Something was written" between replicas over one LISTEN/NOTIFY channel. `announce()` is
 * called after a commit, never inside the transaction: a notifying transaction holds a
 * database-wide lock through its commit, which would queue every write behind the one
 * before it. Announcements are coalesced to one NOTIFY per NOTIFY_EVERY_MS; our own come
 * back to us and are told apart by this process's id. `onOther` also runs after a
 * reconnect, when a notification may have been missed. Without a server of its own (the
 * embedded database runs in this process only) it stays silent.
 *
 * A process that finds no other listener on the channel (the statement that would notify
 * looks first: `PgListener.notifyOthers`) sends nothing for ALONE_RECHECK_MS, then looks
 * again: one replica alone sends at most one statement a second instead of one per write.
 * A replica that starts says so at once on the channel, which ends the others' silence;
 * until they hear it, its loops' own timers stand for what it misses, as for a lost one.
 */
export class ReplicaSignal {
  private readonly instance = randomUUID();
  private listener?: PgListener;
  private timer?: NodeJS.Timeout;
  /** Until when no other listener was found: nothing is sent before then. */
  private aloneUntil = 0;

  constructor(
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  async start(databaseUrl: string | null, embedded: boolean, onOther: () => void): Promise<void> {
    if (embedded || !databaseUrl) return;
    this.listener = new PgListener(databaseUrl, this.channel, (payload) => {
      if (payload === this.instance) return;
      // Another replica spoke: it listens too.
      if (payload !== undefined) this.aloneUntil = 0;
      onOther();
    }, this.logger);
    await this.listener.start();
    // Heard by the replicas already running, whose silence it ends.
    await this.notify();
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
    if (!this.listener || Date.now() < this.aloneUntil) return;
    // Other replicas' timers cover a lost notification; the listener reconnects on its own.
    const others = await this.listener.notifyOthers(this.instance).catch((error: unknown) => {
      this.logger.debug({ err: error }, `Could not notify ${this.channel}`);
      return true;
    });
    if (!others) this.aloneUntil = Date.now() + ALONE_RECHECK_MS;
  }
}
