import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { eventStreamsCut } from '../metrics/controller-metrics';
import { EventFeed } from './event-feed';
import { EventRow, EventsRepository } from './events.repository';

/** Events read at once, for all live streams or for one stream catching up. */
const PAGE = 500;
/** A comment line after this much quiet keeps proxies from closing an idle stream. */
const KEEP_ALIVE_MS = 15_000;
/** Keep-alives are due and credentials are looked at again this often, for every stream at once. */
const SWEEP_MS = 5000;
const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

/** `text/event-stream` framing of one event: its id (for Last-Event-ID), kind and JSON body. */
export function sseFrame(event: EventRow): string {
  return `id: ${event.id}\nevent: ${event.kind}\ndata: ${JSON.stringify({ id: event.id, kind: event.kind, at: event.at, ...event.data })}\n\n`;
}

/** Where a stream's bytes go: `SseSink` on an HTTP response. */
export interface EventSink {
  readonly closed: boolean;
  /** Bytes given to the client that it has not taken yet. */
  readonly unsent: number;
  write(chunk: Buffer): void;
  drained(): Promise<void>;
  end(lastLine?: string): void;
  onClose(listener: () => void): void;
}

interface EventStream {
  sink: EventSink;
  /** The last event id this stream was given (or chose to start after). */
  cursor: number;
  taskGuid?: string;
  alive?: () => Promise<boolean>;
  lastWriteAt: number;
}

/**
 * The events of one page, each framed once, and joined once per filter: every stream with
 * the same filter is given the same Buffer.
 */
class FramedPage {
  private readonly frames: { taskGuid: string | null; frame: Buffer }[];
  private readonly joined = new Map<string, Buffer>();

  constructor(rows: EventRow[]) {
    this.frames = rows.map((row) => ({ taskGuid: row.taskGuid, frame: Buffer.from(sseFrame(row)) }));
  }

  chunkFor(taskGuid?: string): Buffer {
    const key = taskGuid ?? '';
    let chunk = this.joined.get(key);
    if (!chunk) {
      chunk = Buffer.concat(this.frames.filter((f) => taskGuid === undefined || f.taskGuid === taskGuid).map((f) => f.frame));
      this.joined.set(key, chunk);
    }
    return chunk;
  }
}

/**
 * Fans the event log out to every event stream of this replica. Streams at the feed's
 * horizon are `live`: when the horizon moves the replica reads the new events once, frames
 * each once and gives every live stream the page in one write. A stream that starts behind
 * (Last-Event-ID) reads its own pages, the next only once the client took the last, then
 * joins the live ones. A live stream whose client leaves more than STREAM_BUFFER_BYTES
 * unsent is cut, so one slow reader never holds the replica's memory or delays the others:
 * it reconnects with Last-Event-ID and catches up through the paged replay.
 */
@Injectable()
export class EventFanout implements OnApplicationShutdown {
  private readonly logger = new Logger(EventFanout.name);
  private readonly streams = new Set<EventStream>();
  private readonly live = new Set<EventStream>();
  /** Streams ahead of `delivered` (an id another replica has already passed): live once it is reached. */
  private readonly waiting = new Set<EventStream>();
  /** Every live stream has been given the events up to this id. */
  private delivered = 0;
  private readonly loop = new SerialLoop(() => this.advance(), (error) => this.logger.warn({ err: error }, 'Event fan-out read failed'));
  private subscription?: Subscription;
  private sweepTimer?: NodeJS.Timeout;

  constructor(
    private readonly feed: EventFeed,
    private readonly events: EventsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  get openStreams(): number {
    return this.streams.size;
  }

  /** Serves `sink` the events after `after` (from now without it) until it closes. */
  open(sink: EventSink, options: { after?: number; taskGuid?: string; alive?: () => Promise<boolean> }): void {
    const stream: EventStream = { sink, cursor: options.after ?? this.feed.horizon, taskGuid: options.taskGuid, alive: options.alive, lastWriteAt: Date.now() };
    this.streams.add(stream);
    sink.onClose(() => this.forget(stream));
    if (this.streams.size === 1) this.watch();
    this.place(stream);
  }

  onApplicationShutdown(): void {
    this.unwatch();
    void this.loop.stop();
    for (const stream of this.streams) this.end(stream);
  }

  /** A stream at `delivered` goes live, one behind catches up, one ahead waits. */
  private place(stream: EventStream): void {
    if (!this.streams.has(stream)) return;
    if (stream.cursor === this.delivered) this.live.add(stream);
    else if (stream.cursor < this.delivered) void this.catchUp(stream);
    else this.waiting.add(stream);
    // Events past `delivered` (written while no stream was live) are read now, not at the next write.
    if (stream.cursor >= this.delivered && this.delivered < this.feed.horizon) this.loop.kick();
  }

  private async advance(): Promise<void> {
    while (this.delivered < this.feed.horizon) {
      const upTo = this.feed.horizon;
      if (this.live.size === 0) {
        this.delivered = upTo;
        break;
      }
      const rows = await this.events.range(this.delivered, upTo, PAGE);
      this.delivered = rows.length === PAGE ? rows[rows.length - 1].id : upTo;
      if (rows.length > 0) this.broadcast(new FramedPage(rows));
    }
    for (const stream of this.waiting) {
      if (stream.cursor > this.delivered) continue;
      this.waiting.delete(stream);
      this.place(stream);
    }
  }

  private broadcast(page: FramedPage): void {
    const now = Date.now();
    for (const stream of this.live) {
      stream.cursor = this.delivered;
      const chunk = page.chunkFor(stream.taskGuid);
      if (chunk.length > 0) this.send(stream, chunk, now);
    }
  }

  /** Pages from the stream's cursor to `delivered`, each written once the client took the one before. */
  private async catchUp(stream: EventStream): Promise<void> {
    try {
      while (this.streams.has(stream) && stream.cursor < this.delivered) {
        if (stream.alive && !(await stream.alive())) return this.end(stream);
        const upTo = this.delivered;
        const rows = await this.events.range(stream.cursor, upTo, PAGE, stream.taskGuid);
        stream.cursor = rows.length === PAGE ? rows[rows.length - 1].id : upTo;
        if (rows.length > 0) {
          stream.sink.write(new FramedPage(rows).chunkFor(stream.taskGuid));
          stream.lastWriteAt = Date.now();
          await stream.sink.drained();
        }
      }
      this.place(stream);
    } catch (error) {
      this.logger.warn({ err: error }, 'An event stream could not read its replay; it ends and its client resumes');
      this.end(stream);
    }
  }

  /**
   * Gives a live stream its chunk, unless its client still has not taken more than
   * STREAM_BUFFER_BYTES of what it was given before: then it is cut. Measured before the
   * write, so one large page never cuts a client that keeps up.
   */
  private send(stream: EventStream, chunk: Buffer, now: number): void {
    const unsent = stream.sink.unsent;
    if (unsent > this.config.streamBufferBytes && this.live.has(stream)) return this.cut(stream, unsent);
    stream.sink.write(chunk);
    stream.lastWriteAt = now;
  }

  private cut(stream: EventStream, unsent: number): void {
    eventStreamsCut.inc();
    this.end(stream, `: cut: ${unsent} bytes waited unsent for this client (STREAM_BUFFER_BYTES ${this.config.streamBufferBytes}); reconnect with Last-Event-ID to resume\n\n`);
  }

  private end(stream: EventStream, lastLine?: string): void {
    this.forget(stream);
    stream.sink.end(lastLine);
  }

  private forget(stream: EventStream): void {
    if (!this.streams.delete(stream)) return;
    this.live.delete(stream);
    this.waiting.delete(stream);
    if (this.streams.size === 0) this.unwatch();
  }

  /** Follows the feed only while streams are open: with none, the feed reads nothing for this replica's writes. */
  private watch(): void {
    this.subscription = this.feed.advanced.subscribe(() => this.loop.kick());
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
  }

  private unwatch(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    clearInterval(this.sweepTimer);
  }

  /** Keep-alives for quiet streams; streams whose credential expired or was revoked end. */
  private sweep(): void {
    const now = Date.now();
    for (const stream of this.streams) {
      if (now - stream.lastWriteAt >= KEEP_ALIVE_MS) this.send(stream, KEEP_ALIVE, now);
      stream.alive?.().then((alive) => alive || this.end(stream), () => undefined);
    }
  }
}
