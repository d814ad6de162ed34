import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SerialLoop } from '../loop/serial-loop';

/** One kind of old data a role deletes: a batch at a time, answering how many it removed. */
export interface RetentionTarget {
  /** What the log line calls it ("final tasks", "webhook deliveries"). */
  name: string;
  /** Days data is kept; 0 keeps it for good. */
  days: number;
  /** Deletes up to `batch` items older than `days`; answers how many it deleted. */
  sweep(days: number, batch: number): Promise<number>;
}

/** Rows per DELETE: small enough that no statement holds its locks for long. */
export const RETENTION_BATCH = 500;
/** How often a sweep runs (and how soon after boot the first one does). */
const SWEEP_EVERY_MS = 5 * 60 * 1000;
const FIRST_SWEEP_AFTER_MS = 30 * 1000;
/** A pause between batches, so a long backlog is worked off without crowding the database. */
const PAUSE_BETWEEN_BATCHES_MS = 50;

/**
 * Deletes data past its retention, on every replica of a role: each batch is a DELETE of
 * rows picked with FOR UPDATE SKIP LOCKED (see the targets), so replicas sweeping at once
 * take different rows and never wait on each other. A failing target (database or object
 * storage down) is logged and tried again next time; the others still run.
 */
export abstract class RetentionSweep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(this.constructor.name);
  private readonly loop = new SerialLoop(async () => void (await this.sweepAll()), (error) => this.logger.error({ err: error }, 'Retention sweep failed'));
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;

  protected abstract targets(): RetentionTarget[];

  onApplicationBootstrap(): void {
    if (this.targets().every((target) => target.days === 0)) return;
    const first = setTimeout(() => this.loop.kick(), FIRST_SWEEP_AFTER_MS);
    const every = setInterval(() => this.loop.kick(), SWEEP_EVERY_MS);
    first.unref();
    every.unref();
    this.timers = [first, every];
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    await this.loop.stop();
  }

  /** Works every target's backlog off, batch by batch; answers how many each removed. */
  async sweepAll(): Promise<Map<string, number>> {
    const removed = new Map<string, number>();
    for (const target of this.targets()) {
      if (target.days === 0) continue;
      let total = 0;
      try {
        for (;;) {
          const count = await target.sweep(target.days, RETENTION_BATCH);
          total += count;
          if (count < RETENTION_BATCH || this.stopping) break;
          await new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_BATCHES_MS));
        }
      } catch (error) {
        this.logger.warn({ err: error, target: target.name, removed: total }, `Retention sweep of ${target.name} stopped; it runs again later`);
      }
      removed.set(target.name, total);
      if (total > 0) this.logger.log({ target: target.name, removed: total, days: target.days }, `Deleted ${total} ${target.name} past retention`);
    }
    return removed;
  }
}
