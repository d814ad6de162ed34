import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { firstValueFrom, race, timer } from 'rxjs';
import { map, take } from 'rxjs/operators';
import { EventFeed } from './event-feed';
import { EventRow, EventsRepository } from './events.repository';

const PAGE = 500;
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

  async *stream(options: { after?: number; taskGuid?: string }): AsyncGenerator<string> {
    let cursor = options.after ?? this.feed.horizon;
    yield 'retry: 2000\n\n';
    if (options.after !== undefined) {
      const oldest = await this.events.oldestId();
      if (oldest !== null && options.after < oldest - 1) yield `: events before ${oldest} are no longer kept\n\n`;
    }
    for (;;) {
      const horizon = this.feed.horizon;
      if (cursor < horizon) {
        const rows = await this.events.range(cursor, horizon, PAGE, options.taskGuid);
        for (const row of rows) yield sseFrame(row);
        cursor = rows.length === PAGE ? rows[rows.length - 1].id : horizon;
        continue;
      }
      if (!(await this.nextAdvance())) yield ': keep-alive\n\n';
    }
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
