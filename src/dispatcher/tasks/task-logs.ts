import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { OBJECT_STORAGE, ObjectStorage, readAll } from '../../shared/storage/object-storage';
import { lastLines } from '../runtime/output-tail';
import { RuntimeBackend } from '../runtime/runtime';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { RecentKeys } from '../../shared/state/recent-keys';
import { isFinal, TaskStatus } from './task-state';
import { SharedLogFollows } from './shared-log-follows';
import { TaskSignals } from './task-signals';
import { runtimeKeyOf, TaskEntity } from './task.entity';

/** Where a final task's output is kept; the retention sweep deletes it with the task. */
export const logsKeyOf = (taskId: string): string => `logs/${taskId}.txt`;
/**
 * Records a final task's output as stored (`logs_stored_at`), which lets its callback go. The
 * callback delivery replaces the plain UPDATE with one statement that also takes the callback
 * to send (`CallbackDeliveryService.outputStored`).
 */
export type OutputStored = (taskId: string) => Promise<void>;

/** A check-back's agent has this long to exit before its output so far is stored. */
const CHECKBACK_STORE_AFTER_MS = 2000;
/** A follower checks for new output this often. */
const FOLLOW_POLL_MS = 1000;
/**
 * A follow of a final task waits this long at most for its stored output, which holds the
 * agent's last lines: stored at the agent's stop, or CHECKBACK_STORE_AFTER_MS after a
 * check-back whose agent does not exit.
 */
const FINAL_OUTPUT_WAIT_MS = CHECKBACK_STORE_AFTER_MS + 3000;
/** While it waits, the follow looks for the stored output this often. */
const STORED_POLL_MS = 200;

/**
 * A task's output: read from its agent while it runs, and stored in object storage when the
 * task is final, before its callback goes (the outbox waits for `logs_stored_at`), so any
 * replica serves it after the container, Job or process is gone.
 */
@Injectable()
export class TaskLogs implements OnModuleInit {
  private readonly logger = new Logger('TaskLogs');
  private readonly storing = new Map<string, Promise<void>>();
  /** Tasks whose final output this process stored lately: the check-back's later look at `logs_stored_at` is not needed for them. */
  private readonly storedHere = new RecentKeys(10_000);
  private outputStored: OutputStored = async (taskId) => {
    await this.db.query(`UPDATE "dispatcher"."tasks" SET logs_stored_at = now() WHERE task_id = $1`, [taskId]);
    this.signals.deliver.next();
  };

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
    private readonly shared: SharedLogFollows,
  ) {}

  onModuleInit(): void {
    this.runtimes.onBeforeRemove((backend, taskId, ref, runtimeKey, knownFinal) => this.store(backend, taskId, ref, runtimeKey, knownFinal));
  }

  /** The callback delivery records each stored output itself (`OutputStored`). */
  onOutputStored(record: OutputStored): void {
    this.outputStored = record;
  }

  /**
   * Stores the output of a final task's agent and lets its callback go. Output that cannot
   * be read is stored as a sentence saying so: the callback must not wait for an agent
   * whose output is lost. The task's status is read first unless the caller saw it final.
   */
  store(backend: RuntimeBackend, taskId: string, ref: string, runtimeKey = taskId, knownFinal = false): Promise<void> {
    // One store at a time per task, each reading the output when its turn comes: a later
    // store (the stop's, complete) is never overwritten by an earlier one (a check-back's).
    const previous = this.storing.get(taskId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.storeOnce(backend, taskId, ref, runtimeKey, knownFinal));
    this.storing.set(taskId, next);
    void next.catch(() => undefined).finally(() => {
      if (this.storing.get(taskId) === next) this.storing.delete(taskId);
    });
    return next;
  }

  private async storeOnce(backend: RuntimeBackend, taskId: string, ref: string, runtimeKey: string, knownFinal: boolean): Promise<void> {
    if (!knownFinal) {
      const [row] = (await this.db.query(`SELECT status FROM "dispatcher"."tasks" WHERE task_id = $1`, [taskId])) as { status: TaskStatus }[];
      if (!row || !isFinal(row.status)) return;
    }
    const text = await backend.logs(runtimeKey, ref).catch((error: unknown) => `(the agent's output could not be read: ${error instanceof Error ? error.message : String(error)})\n`);
    await this.storage.put(logsKeyOf(taskId), Buffer.from(text, 'utf8'), { contentType: 'text/plain; charset=utf-8' });
    await this.outputStored(taskId);
    this.storedHere.add(taskId);
  }

  /**
   * At a check-back: an agent that has not exited within CHECKBACK_STORE_AFTER_MS (its
   * output is then stored at its stop, up to 15 s later) gets its output so far stored, so
   * the callback need not wait for the stop. One that exits in time was stored complete.
   */
  async storeNow(task: TaskEntity): Promise<void> {
    const backend = this.runtimes.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef || !this.runtimes.reaches(task)) return;
    await sleep(CHECKBACK_STORE_AFTER_MS, undefined, { ref: false });
    if (this.storedHere.has(task.taskId)) return;
    try {
      const [row] = (await this.db.query(`SELECT logs_stored_at FROM "dispatcher"."tasks" WHERE task_id = $1`, [task.taskId])) as { logs_stored_at: Date | null }[];
      if (row && !row.logs_stored_at) await this.store(backend, task.taskId, task.runtimeRef, runtimeKeyOf(task), isFinal(task.status));
    } catch (error) {
      this.logger.warn({ taskId: task.taskId, err: error }, 'Could not store the agent output');
    }
  }

  /** The output as it is now: the stored copy of a final task, else the agent's own. */
  async read(task: TaskEntity, tail?: number): Promise<string> {
    if (isFinal(task.status) && (task.logsStoredAt || !this.runtimes.reaches(task))) {
      const stored = await this.stored(task.taskId);
      if (stored !== null) return lastLines(stored, tail);
    }
    const backend = this.runtimes.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef) return '';
    return backend.logs(runtimeKeyOf(task), task.runtimeRef, tail);
  }

  /**
   * The output, then what is added to it, until the task is final (its last output
   * included). `reload` reads the task again; null ends the stream, and so does `signal`.
   */
  async *follow(task: TaskEntity, tail: number | undefined, reload: () => Promise<TaskEntity | null>, signal?: AbortSignal): AsyncGenerator<string> {
    const backend = this.runtimes.get(task.runtimeBackend);
    if (backend?.followLogs && !isFinal(task.status) && this.runtimes.reaches(task)) {
      // A backend that streams output is read once per task on this replica, whatever the number of followers.
      yield* this.shared.follow(backend as Required<Pick<RuntimeBackend, 'followLogs'>>, task, tail, reload, signal ?? new AbortController().signal);
      return;
    }
    let full = await this.read(task);
    yield lastLines(full, tail);
    let sent = full.length;
    let current: TaskEntity | null = task;
    // A final task's last lines can come after its check-back (an agent says goodbye, then
    // exits): the follow ends with the copy stored at the agent's stop, waited for a while.
    let lastLinesBy = Infinity;
    while (current && !this.complete(current, lastLinesBy)) {
      if (isFinal(current.status) && lastLinesBy === Infinity) lastLinesBy = Date.now() + FINAL_OUTPUT_WAIT_MS;
      await sleep(isFinal(current.status) ? STORED_POLL_MS : FOLLOW_POLL_MS, undefined, { signal });
      // A poll the database or the engine did not answer (a busy pool) is tried again at the
      // next one: it does not end a follow of a task that is still running.
      const polled = await this.poll(reload);
      if (polled === 'missed') continue;
      if (!polled) return;
      [current, full] = polled;
      // The kept output is bounded: when its start was dropped, go on from its new end.
      if (full.length > sent) yield full.slice(sent);
      sent = full.length;
    }
  }

  /** True once a follow has all of the task's output: final, and stored or no longer readable from its agent. */
  private complete(task: TaskEntity, lastLinesBy: number): boolean {
    if (!isFinal(task.status)) return false;
    return Boolean(task.logsStoredAt) || !this.runtimes.reaches(task) || Date.now() >= lastLinesBy;
  }

  /** The task read again and its output; null when the task is gone; 'missed' when either read failed. */
  private async poll(reload: () => Promise<TaskEntity | null>): Promise<[TaskEntity, string] | null | 'missed'> {
    try {
      const current = await reload();
      return current ? [current, await this.read(current)] : null;
    } catch {
      return 'missed';
    }
  }

  private async stored(taskId: string): Promise<string | null> {
    const stream = await this.storage.get(logsKeyOf(taskId));
    return stream ? (await readAll(stream)).toString('utf8') : null;
  }
}
