import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EventFanout, EventSink } from './event-fanout';
import { EventFeed } from './event-feed';
import { EventsRepository } from './events.repository';

/** Dispatcher states are compared with their heartbeats this often. */
const DISPATCHER_STATES_EVERY_MS = 2000;

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
    private readonly fanout: EventFanout,
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
   * Serves `sink` until it closes. `alive` is asked while the stream lasts: false (the
   * caller's credential expired or was revoked) ends it.
   */
  async open(sink: EventSink, options: { after?: number; taskGuid?: string; alive?: () => Promise<boolean> }): Promise<void> {
    sink.write(Buffer.from('retry: 2000\n\n'));
    if (options.after !== undefined) {
      const oldest = await this.events.oldestId();
      if (oldest !== null && options.after < oldest - 1) sink.write(Buffer.from(`: events before ${oldest} are no longer kept\n\n`));
    }
    this.fanout.open(sink, options);
  }

  private async announceDispatcherStates(): Promise<void> {
    try {
      if ((await this.events.announceDispatcherStates()) > 0) this.feed.written();
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not announce dispatcher states');
    }
  }
}
