import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { lastLines } from '../runtime/output-tail';
import { RuntimeBackend } from '../runtime/runtime';
import { isFinal } from './task-state';
import { TaskEntity } from './task.entity';

/** A follow keeps this much of the output for followers who join late (as the local engines keep 1 MiB). */
const KEPT_CHARS = 1024 * 1024;
/** Wait between reads of the output when one ended or failed while the task is not final. */
const RECONNECT_MS = 1000;
/** A first follower waits this long at most for the output so far before `tail` is applied to it. */
const FIRST_OUTPUT_WAIT_MS = 1000;

type Reload = () => Promise<TaskEntity | null>;

/**
 * One read of a task's output stream on this replica, shared by all its followers: the
 * runtime is asked once per task, whatever the number of followers (a Kubernetes pod log
 * followed once, not once per follower and again every second). The output read so far is
 * kept (the last KEPT_CHARS) at absolute positions, so each follower reads on from its own.
 */
class SharedFollow {
  private text = '';
  /** Characters read since the follow started; `text` ends there. */
  private total = 0;
  private ended = false;
  private followers = 0;
  private readonly upstream = new AbortController();
  private wake: { promise: Promise<void>; resolve: () => void } = waker();
  /** Settled by the first output, or when the first read found none. */
  private readonly firstRead = waker();
  private readonly firstOutput: Promise<unknown>;

  constructor(
    private readonly backend: Required<Pick<RuntimeBackend, 'followLogs'>>,
    private readonly task: TaskEntity,
    private readonly reload: Reload,
    private readonly logger: Logger,
    private readonly onEnd: () => void,
  ) {
    const reading = this.run().catch((error: unknown) => this.logger.warn({ taskId: task.taskId, err: error }, 'A log follow ended early'));
    void reading.finally(() => {
      this.ended = true;
      this.wake.resolve();
      this.firstRead.resolve();
      this.onEnd();
    });
    this.firstOutput = Promise.race([this.firstRead.promise, sleep(FIRST_OUTPUT_WAIT_MS, undefined, { ref: false })]);
  }

  /** The output from what is kept (its last `tail` lines), then what comes, until the task is final. */
  async *reader(tail: number | undefined, signal: AbortSignal): AsyncGenerator<string> {
    this.followers += 1;
    try {
      await this.firstOutput;
      yield lastLines(this.text.slice(-KEPT_CHARS), tail);
      let position = this.total;
      for (;;) {
        if (position < this.total) {
          const start = this.total - this.text.length;
          yield this.text.slice(Math.max(position, start) - start);
          position = this.total;
          continue;
        }
        if (this.ended) return;
        await abortable(this.wake.promise, signal);
      }
    } finally {
      this.followers -= 1;
      // The last follower gone: the read of the output stops with it, and a new follower starts a new one.
      if (this.followers === 0) {
        this.upstream.abort();
        this.onEnd();
      }
    }
  }

  private append(chunk: string): void {
    this.text += chunk;
    // Trimmed once it holds twice what is kept, so a chatty agent costs no copy of the kept output per chunk.
    if (this.text.length > 2 * KEPT_CHARS) this.text = this.text.slice(-KEPT_CHARS);
    this.total += chunk.length;
    this.firstRead.resolve();
    const woken = this.wake;
    this.wake = waker();
    woken.resolve();
  }

  /**
   * Reads the output while the task runs: a read that ends (the container ended, the
   * connection dropped) is opened again, going on past what was already read from the same
   * pod; a replacement pod's output is added after the first's. One last read once the
   * task is final takes the agent's last lines.
   */
  private async run(): Promise<void> {
    const signal = this.upstream.signal;
    let source: string | null = null;
    let fromSource = 0;
    let task: TaskEntity | null = this.task;
    while (task && !signal.aborted) {
      const final = isFinal(task.status);
      if (task.runtimeRef) {
        try {
          const follow = await this.backend.followLogs(task.taskId, task.runtimeRef, signal);
          if (follow) {
            if (follow.source !== source) [source, fromSource] = [follow.source, 0];
            let skip = fromSource;
            for await (const chunk of follow.chunks) {
              const fresh = chunk.slice(Math.min(skip, chunk.length));
              skip -= chunk.length - fresh.length;
              fromSource += fresh.length;
              if (fresh) this.append(fresh);
            }
          }
        } catch (error) {
          if (signal.aborted) return;
          this.logger.warn({ taskId: task.taskId, err: error }, 'Reading the agent output failed; reading it again');
        }
      }
      if (final) return;
      this.firstRead.resolve();
      await sleep(RECONNECT_MS, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      task = await this.reload();
    }
  }
}

/** The shared follows of this replica, one per task followed. */
@Injectable()
export class SharedLogFollows {
  private readonly logger = new Logger('SharedLogFollows');
  private readonly follows = new Map<string, SharedFollow>();

  /** How many reads of agent output this replica holds open: one per task followed. */
  get open(): number {
    return this.follows.size;
  }

  follow(backend: Required<Pick<RuntimeBackend, 'followLogs'>>, task: TaskEntity, tail: number | undefined, reload: Reload, signal: AbortSignal): AsyncGenerator<string> {
    let shared = this.follows.get(task.taskId);
    if (!shared) {
      const created: SharedFollow = new SharedFollow(backend, task, reload, this.logger, () => {
        if (this.follows.get(task.taskId) === created) this.follows.delete(task.taskId);
      });
      this.follows.set(task.taskId, created);
      shared = created;
    }
    return shared.reader(tail, signal);
  }
}

function waker(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

function abortable(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    });
  });
}
