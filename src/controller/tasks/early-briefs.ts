import { Inject, Injectable } from '@nestjs/common';
import pLimit from 'p-limit';
import { OBJECT_STORAGE, ObjectStorage } from '../../shared/storage/object-storage';

/** Writes under way at once, beside the dispatch batches' own. */
const CONCURRENT_WRITES = 8;
/** Writes kept for a batch to take; past this, a stored task's brief waits for its batch. */
const MAX_KEPT = 1000;
/** A write no batch here took by then (another replica claimed its task, or it waits its turn) is forgotten. */
const KEEP_MS = 30_000;

/** A stored, pending task as far as its brief goes. */
export interface BriefOf {
  guid: string;
  briefKey: string;
  briefPending: string | null;
}

interface Kept {
  written: Promise<boolean>;
  startedAt: number;
}

/**
 * Starts writing a new task's inline brief to object storage as soon as the task is stored,
 * while the dispatch round claims it: a task is sent to its dispatcher only once its brief is
 * there, and the write otherwise starts only after the claim. The batch that dispatches the
 * task takes the write under way (`take`) instead of starting its own; a write that failed is
 * made again by the batch, which records the reason as before.
 *
 * Only while a dispatcher is online (a flood of tasks with none up costs no storage write, as
 * before), at most MAX_KEPT writes kept, each for KEEP_MS. A task claimed by another replica
 * has its brief written again there, with the same bytes: nothing but this process's memory
 * knows of a write under way.
 */
@Injectable()
export class EarlyBriefs {
  private readonly kept = new Map<string, Kept>();
  private readonly limit = pLimit(CONCURRENT_WRITES);
  /** What the dispatch loop's last look found; tasks stored while none is online are written at dispatch. */
  private dispatchersOnline = false;

  constructor(@Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage) {}

  /** Told by each dispatch round. */
  setDispatchersOnline(online: boolean): void {
    this.dispatchersOnline = online;
  }

  /** Starts the writes of these stored tasks' inline briefs; never waits, never throws. */
  start(tasks: Iterable<BriefOf>, now = Date.now()): void {
    if (!this.dispatchersOnline) return;
    this.forgetOlderThan(now - KEEP_MS);
    for (const task of tasks) {
      if (task.briefPending === null) continue;
      if (this.kept.size >= MAX_KEPT || this.kept.has(task.guid)) continue;
      const body = Buffer.from(task.briefPending, 'utf8');
      const written = this.limit(() => this.storage.put(task.briefKey, body, { contentType: 'application/json' }))
        .then(() => true, () => false);
      this.kept.set(task.guid, { written, startedAt: now });
    }
  }

  /** The write under way for the task, handed over once (true: the brief is stored); undefined when none was started here. */
  take(guid: string): Promise<boolean> | undefined {
    const kept = this.kept.get(guid);
    if (!kept) return undefined;
    this.kept.delete(guid);
    return kept.written;
  }

  /** Writes kept now. */
  get size(): number {
    return this.kept.size;
  }

  /** The map holds the writes in the order they started: the oldest are first. */
  private forgetOlderThan(cutoff: number): void {
    for (const [guid, kept] of this.kept) {
      if (kept.startedAt >= cutoff) return;
      this.kept.delete(guid);
    }
  }
}
