import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import type Docker from 'dockerode';

/** The first pause before a stream that ended is opened again; it doubles up to RECONNECT_MAX_MS while the engine stays away. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 10_000;
/** Events already handed on, remembered so that a stream opened again from the last one's time does not report it twice. */
const SEEN_EVENTS = 1_000;

/** A container of this dispatcher that stopped running. */
export interface ContainerExit {
  /** The container's name: the runtime's reference of its agent. */
  name: string;
  /** Its task-id label (a pool agent's id for a pool's container). */
  taskId: string;
}

interface EngineEvent {
  Action?: string;
  id?: string;
  time?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/**
 * The exits of one dispatcher's containers, from one events stream of the engine filtered by the
 * dispatcher's label, instead of a `wait` request held open per container. Podman answers a
 * `wait` by reading the container's state over and over: twenty idle containers waited on kept
 * its service at 1.1 cores (111 of 200 ticks a second, measured on Podman 4.3 with nothing else
 * running), where one events stream keeps it at none. Docker's `wait` is cheaper, but still one
 * connection per running agent.
 *
 * A stream that ends is opened again from the time of the last event it gave (`since`), or of
 * the engine's answer when it gave none, so an exit while it was away is still reported; the
 * scheduler's slow resync is the net under that (an engine that lost its events, as a restarted
 * Docker does).
 */
export class ContainerExits {
  private readonly logger = new Logger('ContainerExits');
  private readonly closing = new AbortController();
  private readonly seen = new Set<string>();
  private since?: string;
  private started?: Promise<void>;
  private failures = 0;

  constructor(
    private readonly docker: Docker,
    /** `label=value` every container of the dispatcher carries. */
    private readonly label: string,
    /** The label that names a container's task. */
    private readonly taskIdLabel: string,
    private readonly onExit: (exit: ContainerExit) => void,
  ) {}

  /**
   * Resolves once the engine is listened to (or the first try to reach it failed, and a later
   * stream will start from the time of that try): an exit after this is reported.
   */
  watching(): Promise<void> {
    this.started ??= new Promise<void>((resolve) => void this.follow(resolve));
    return this.started;
  }

  close(): void {
    this.closing.abort();
  }

  /** Opens the stream, reads it to its end, and opens it again until closed. */
  private async follow(started: () => void): Promise<void> {
    while (!this.closing.signal.aborted) {
      const tried = Date.now();
      try {
        const stream = (await this.docker.getEvents({
          // The engine's own event name is the filter's value: `die` on Docker, `died` on Podman (which reports it as `die`).
          filters: { type: ['container'], event: ['die', 'died'], label: [this.label] },
          ...(this.since ? { since: this.since } : {}),
          abortSignal: this.closing.signal,
        } as Docker.GetEventsOptions)) as unknown as IncomingMessage;
        // No event yet: a stream opened again starts where this one did, on the engine's clock (its Date, to the second).
        this.since ??= engineSeconds(stream.headers.date) ?? seconds(tried);
        if (this.failures > 0) this.logger.log('Following container exits again');
        this.failures = 0;
        started();
        await this.read(stream);
      } catch (error) {
        if (this.closing.signal.aborted) return;
        this.since ??= seconds(tried - 5_000);
        if (this.failures === 0) this.logger.warn(`The container engine's events could not be read (${(error as Error).message}); trying again`);
        this.failures += 1;
        started();
      }
      if (this.closing.signal.aborted) return;
      // Ends early (rejecting) when closed; the loop's condition then stops it.
      await sleep(Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(this.failures, 10)), undefined, { signal: this.closing.signal }).catch(() => undefined);
    }
  }

  private async read(stream: IncomingMessage): Promise<void> {
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      if (!line.trim()) continue;
      let event: EngineEvent;
      try {
        event = JSON.parse(line) as EngineEvent;
      } catch {
        this.logger.warn(`The container engine sent an event that is not JSON: ${line.slice(0, 200)}`);
        continue;
      }
      // timeNano is past what a double holds exactly: read as written.
      this.take(event, /"timeNano":\s*(\d{10,})/.exec(line)?.[1]);
    }
    if (!this.closing.signal.aborted) throw new Error('the stream ended');
  }

  private take(event: EngineEvent, timeNano: string | undefined): void {
    if (event.Action !== 'die' && event.Action !== 'died') return;
    const attributes = event.Actor?.Attributes ?? {};
    const key = `${event.Actor?.ID ?? event.id}/${timeNano ?? event.time}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (this.seen.size > SEEN_EVENTS) this.seen.delete(this.seen.values().next().value!);
    if (timeNano) this.since = `${timeNano.slice(0, -9)}.${timeNano.slice(-9)}`;
    else if (event.time) this.since = String(event.time);
    const taskId = attributes[this.taskIdLabel];
    const name = attributes.name;
    if (taskId && name) this.onExit({ name, taskId });
  }
}

function seconds(ms: number): string {
  return String(Math.floor(ms / 1000));
}

function engineSeconds(date: string | undefined): string | undefined {
  const ms = date ? Date.parse(date) : NaN;
  return Number.isNaN(ms) ? undefined : seconds(ms - 1_000);
}
