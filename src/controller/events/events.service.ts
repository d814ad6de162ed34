import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { firstValueFrom, race, timer } from 'rxjs';
import { map, take } from 'rxjs/operators';
import { EventFeed } from './event-feed';
import { EventRow, EventsRepository } from './events.repository';

const PAGE = 500;
/** Range reads kept for streams to share. */
const SHARED_READS = 32;
/** A comment line this often keeps proxies from closing an idle stream. */
const KEEP_ALIVE_MS = 15_000;
/** Dispatcher states are compared with their heartbeats this often. */
const DISPATCHER_STATES_EVERY_MS = 2000;

/** `text/event-stream` framing of one event: its id (for Last-Event-ID), kind and JSON body. */
export function sseFrame(event: EventRow): string {
  return `id: ${event.id}\nevent: ${event.kind}\ndata: ${JSON.stringify({ id: event.id, kind: event.kind, at: event.at, ...event.data })}\n\n`;
}

/**
 * The live event stream: every event after the client's Last-Event-ID (or from now),
 * read by id range up to the feed's horizon, so a stream on any replica sees what any
 * replica wrote, in order, and a reconnect misses nothing still in the window.
 */
@Injectable()
export class EventsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EventsService.name);
  private stateTimer?: NodeJS.Timeout;
  private readonly reads = new Map<string, Promise<EventRow[]>>();

  constructor(
    private readonly feed: EventFeed,
    private readonly events: EventsRepository,
  ) {}

  onApplicationBootstrap(): void {
    this.stateTimer = setInterval(() => void this.announceDispatcherStates(), DISPATCHER_STATES_EVERY_MS);
    this.stateTimer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.stateTimer);
  }

  /**
   * `alive` is asked before each read and keep-alive: false (the caller's credential expired
   * or was revoked) ends the stream.
   */
  async *stream(options: { after?: number; taskGuid?: string; alive?: () => Promise<boolean> }): AsyncGenerator<string> {
    let cursor = options.after ?? this.feed.horizon;
    yield 'retry: 2000\n\n';
    if (options.after !== undefined) {
      const oldest = await this.events.oldestId();
      if (oldest !== null && options.after < oldest - 1) yield `: events before ${oldest} are no longer kept\n\n`;
    }
    for (;;) {
      if (options.alive && !(await options.alive())) return;
      const horizon = this.feed.horizon;
      if (cursor < horizon) {
        // A task's stream far behind replays through its index; near the horizon every stream shares one read.
        const behind = options.taskGuid !== undefined && horizon - cursor > PAGE;
        const rows = behind ? await this.events.range(cursor, horizon, PAGE, options.taskGuid) : await this.sharedRange(cursor, horizon);
        for (const row of rows) if (options.taskGuid === undefined || row.taskGuid === options.taskGuid) yield sseFrame(row);
        cursor = rows.length === PAGE ? rows[rows.length - 1].id : horizon;
        continue;
      }
      if (!(await this.nextAdvance())) yield ': keep-alive\n\n';
    }
  }

  /**
   * One page of every event in (after, upTo], read once for all the streams of this replica
   * that ask for it: the streams at the horizon all ask for the same range when it advances.
   */
  private sharedRange(after: number, upTo: number): Promise<EventRow[]> {
    const key = `${after}:${upTo}`;
    let rows = this.reads.get(key);
    if (!rows) {
      rows = this.events.range(after, upTo, PAGE);
      this.reads.set(key, rows);
      rows.catch(() => this.reads.delete(key));
      // Streams catching up ask for older ranges; only the last few are worth keeping.
      if (this.reads.size > SHARED_READS) this.reads.delete(this.reads.keys().next().value!);
    }
    return rows;
  }

  /** True when the feed moved on; false after KEEP_ALIVE_MS of quiet. */
  private nextAdvance(): Promise<boolean> {
    return firstValueFrom(race(this.feed.advanced.pipe(take(1), map(() => true)), timer(KEEP_ALIVE_MS).pipe(map(() => false))), { defaultValue: false });
  }

  private async announceDispatcherStates(): Promise<void> {
    try {
      if ((await this.events.announceDispatcherStates()) > 0) this.feed.written();
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not announce dispatcher states');
    }
  }
}
