import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { OBJECT_STORAGE, ObjectStorage, readAll } from '../../shared/storage/object-storage';
import { lastLines } from '../runtime/output-tail';
import { RuntimeBackend } from '../runtime/runtime';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { isFinal, TaskStatus } from './task-state';
import { TaskSignals } from './task-signals';
import { TaskEntity } from './task.entity';

/** Where a final task's output is kept; the retention sweep deletes it with the task. */
export const logsKeyOf = (taskId: string): string => `logs/${taskId}.txt`;
/** A follower checks for new output this often. */
const FOLLOW_POLL_MS = 1000;

/**
 * A task's output: read from its agent while it runs, and stored in object storage when the
 * task is final, before its callback goes (the outbox waits for `logs_stored_at`), so any
 * replica serves it after the container, Job or process is gone.
 */
@Injectable()
export class TaskLogs implements OnModuleInit {
  private readonly logger = new Logger('TaskLogs');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
  ) {}

  onModuleInit(): void {
    this.runtimes.onBeforeRemove((backend, taskId, ref) => this.store(backend, taskId, ref));
  }

  /**
   * Stores the output of a final task's agent and lets its callback go. Output that cannot
   * be read is stored as a sentence saying so: the callback must not wait for an agent
   * whose output is lost.
   */
  async store(backend: RuntimeBackend, taskId: string, ref: string): Promise<void> {
    const [row] = (await this.db.query(`SELECT status FROM "dispatcher"."tasks" WHERE task_id = $1`, [taskId])) as { status: TaskStatus }[];
    if (!row || !isFinal(row.status)) return;
    const text = await backend.logs(taskId, ref).catch((error: unknown) => `(the agent's output could not be read: ${error instanceof Error ? error.message : String(error)})\n`);
    await this.storage.put(logsKeyOf(taskId), Buffer.from(text, 'utf8'), { contentType: 'text/plain; charset=utf-8' });
    await this.db.query(`UPDATE "dispatcher"."tasks" SET logs_stored_at = now() WHERE task_id = $1`, [taskId]);
    this.signals.deliver.next();
  }

  /** At a check-back, while the agent may linger: its output so far, so the callback need not wait for the stop. */
  async storeNow(task: TaskEntity): Promise<void> {
    const backend = this.runtimes.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef || !this.runtimes.reaches(task)) return;
    await this.store(backend, task.taskId, task.runtimeRef).catch((error: unknown) => this.logger.warn({ taskId: task.taskId, err: error }, 'Could not store the agent output'));
  }

  /** The output as it is now: the stored copy of a final task, else the agent's own. */
  async read(task: TaskEntity, tail?: number): Promise<string> {
    if (isFinal(task.status) && (task.logsStoredAt || !this.runtimes.reaches(task))) {
      const stored = await this.stored(task.taskId);
      if (stored !== null) return lastLines(stored, tail);
    }
    const backend = this.runtimes.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef) return '';
    return backend.logs(task.taskId, task.runtimeRef, tail);
  }

  /**
   * The output, then what is added to it, until the task is final (its last output
   * included). `reload` reads the task again; null ends the stream.
   */
  async *follow(task: TaskEntity, tail: number | undefined, reload: () => Promise<TaskEntity | null>): AsyncGenerator<string> {
    let full = await this.read(task);
    yield lastLines(full, tail);
    let sent = full.length;
    let current: TaskEntity | null = task;
    while (current && !isFinal(current.status)) {
      await sleep(FOLLOW_POLL_MS);
      current = await reload();
      if (!current) return;
      full = await this.read(current);
      // The kept output is bounded: when its start was dropped, go on from its new end.
      if (full.length > sent) yield full.slice(sent);
      sent = full.length;
    }
  }

  private async stored(taskId: string): Promise<string | null> {
    const stream = await this.storage.get(logsKeyOf(taskId));
    return stream ? (await readAll(stream)).toString('utf8') : null;
  }
}
