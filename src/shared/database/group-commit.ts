import { Context, context } from '@opentelemetry/api';
import { untracedContext } from '../logging/request-context';

export interface GroupCommitOptions {
  /** The most items one write takes. */
  maxBatch: number;
  /** The most writes under way at once; items that come meanwhile wait for the next. */
  maxInFlight: number;
}

/**
 * Group commit for writes that each caller waits for: an item waits only while `maxInFlight`
 * writes are under way, and every item queued meanwhile goes in the next single write. A
 * lone item is written at once (no timer, no added latency when idle); under load, a burst
 * of items costs one statement, one round trip and one commit instead of one each.
 *
 * `write` answers one result per item, in order. When a write of several items fails, each
 * is written again alone, so one item the database refuses fails its own caller only. Hand
 * written rather than DataLoader's: that one batches what arrives in one tick, not what
 * arrives while a write is under way, which is where the batches come from here.
 */
export class GroupCommit<T, R> {
  private queue: { item: T; scope: Context; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, scope: context.active(), resolve, reject });
      this.pump();
    });
  }

  /** Resolves once every item added before the call is written (or refused). */
  async idle(): Promise<void> {
    while (this.writing.size > 0) await Promise.all(this.writing);
  }

  private pump(): void {
    while (this.writing.size < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      // A write of one item is part of its caller's trace; one that serves several callers
      // belongs to none of their traces.
      const scope = batch.length === 1 ? batch[0].scope : untracedContext();
      const written: Promise<void> = context.with(scope, () => this.run(batch)).finally(() => {
        this.writing.delete(written);
        this.pump();
      });
      this.writing.add(written);
    }
  }

  private async run(batch: GroupCommit<T, R>['queue']): Promise<void> {
    try {
      const results = await this.write(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(results[i]));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      await Promise.all(batch.map((entry) => this.write([entry.item]).then(([result]) => entry.resolve(result), entry.reject)));
    }
  }
}
