import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Subject } from 'rxjs';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { ReplicaSignal } from '../../shared/database/replica-signal';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { EVENTS } from './event-sql';

/** The channel replicas tell each other on that events were written. */
export const EVENTS_CHANNEL = 'controller_events';
/** The feed looks for new events this often even when nobody said there are some. */
const POLL_MS = 1000;
/**
 * An id below the newest one that is not visible yet belongs to a transaction still
 * committing: the feed waits for it this long, then takes it as rolled back.
 */
const GAP_WAIT_MS = 2000;
const SCAN_LIMIT = 1000;

/**
 * How far the event log can be read without missing anything (`horizon`): ids come from
 * one sequence, but transactions commit out of order, so an id is passed only once every
 * id below it is visible (or has been missing for GAP_WAIT_MS). Woken in this process when
 * it writes events, through LISTEN/NOTIFY (`ReplicaSignal`, sent after commit) when another
 * replica does, and by a timer.
 */
@Injectable()
export class EventFeed implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly advanced = new Subject<number>();
  /**
   * Events were committed, by this process or (as far as it heard) another replica: what reads
   * them (the subscription outbox) looks now. One signal per process on EVENTS_CHANNEL, so a
   * replica alone finds no other listener and sends nothing.
   */
  readonly wrote = new Subject<void>();
  private readonly logger = new Logger(EventFeed.name);
  private readonly loop = new SerialLoop(() => this.scan(), (error) => this.logger.warn({ err: error }, 'Event feed scan failed'));
  private readonly signal = new ReplicaSignal(EVENTS_CHANNEL, this.logger);
  private pollTimer?: NodeJS.Timeout;
  private gap?: { from: number; seenAt: number };
  private current = 0;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Every event up to this id can be read. */
  get horizon(): number {
    return this.current;
  }

  /** Events were written (and committed) by this process. */
  written(): void {
    // With no stream open here, the poll keeps the horizon fresh enough: no query per write.
    if (this.advanced.observed) this.loop.kick();
    this.wrote.next();
    this.signal.announce();
  }

  async onApplicationBootstrap(): Promise<void> {
    const [row] = (await this.db.query(`SELECT COALESCE(max(id), 0) AS id FROM ${EVENTS}`)) as { id: string }[];
    this.current = Number(row.id);
    this.pollTimer = setInterval(() => this.loop.kick(), POLL_MS);
    this.pollTimer.unref();
    await this.signal.start(this.config.databaseUrl, this.config.databaseEmbedded, () => {
      this.loop.kick();
      this.wrote.next();
    });
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.pollTimer);
    await this.loop.stop();
    await this.signal.stop();
    this.advanced.complete();
    this.wrote.complete();
  }

  private async scan(): Promise<void> {
    const rows = (await this.db.query(`SELECT id FROM ${EVENTS} WHERE id > $1 ORDER BY id LIMIT $2`, [this.current, SCAN_LIMIT])) as { id: string }[];
    const before = this.current;
    for (const id of rows.map((row) => Number(row.id))) {
      if (id !== this.current + 1 && !this.gapClosed(this.current + 1)) break;
      this.current = id;
      this.gap = undefined;
    }
    if (this.current !== before) this.advanced.next(this.current);
    // A gap still open, or more rows than one scan reads: look again soon.
    if (this.gap || rows.length === SCAN_LIMIT) setTimeout(() => this.loop.kick(), this.gap ? 200 : 0).unref();
  }

  /** True once the ids from `from` have been missing for GAP_WAIT_MS. */
  private gapClosed(from: number): boolean {
    if (this.gap?.from !== from) this.gap = { from, seenAt: Date.now() };
    return Date.now() - this.gap.seenAt >= GAP_WAIT_MS;
  }
}
