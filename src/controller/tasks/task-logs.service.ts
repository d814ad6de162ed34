import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../shared/errors/domain-error';
import { OBJECT_STORAGE, ObjectStorage, readAll } from '../../shared/storage/object-storage';
import { lastLines } from '../../shared/task-protocol/last-lines';
import { DispatchersService } from '../dispatchers/dispatchers.service';
import { DispatcherClient } from './dispatcher-client';
import { dispatcherTaskIdOf } from '../scheduling/dispatcher-task-id';
import { isFinal } from './task-state';
import { Task } from './tasks.entity';
import { TasksService } from './tasks.service';

/** A follower of a task not yet on a dispatcher looks again this often. */
const WAIT_FOR_DISPATCH_MS = 1000;

/**
 * A task's output: from object storage (`logs/<guid>.txt`, where its dispatcher stores it
 * before the callback) once the task is final, from its dispatcher while it runs.
 */
@Injectable()
export class TaskLogsService {
  private readonly logger = new Logger(TaskLogsService.name);

  constructor(
    private readonly tasks: TasksService,
    private readonly dispatchers: DispatchersService,
    private readonly client: DispatcherClient,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
  ) {}

  async read(guid: string, tail?: number): Promise<string> {
    const task = await this.tasks.get(guid);
    if (isFinal(task.status)) {
      const stored = await this.stored(dispatcherTaskIdOf(task), tail);
      if (stored !== null) return stored;
    }
    return this.fromDispatcher(task, tail);
  }

  /**
   * The output, then what is added to it until the task is final; 404 before any byte for
   * an unknown task. `signal` (the client went away) ends it and its request to the dispatcher.
   */
  async follow(guid: string, tail: number | undefined, signal: AbortSignal): Promise<AsyncGenerator<string>> {
    const task = await this.tasks.get(guid);
    return this.followTask(task, tail, signal);
  }

  private async *followTask(initial: Task, tail: number | undefined, signal: AbortSignal): AsyncGenerator<string> {
    let task = initial;
    // A pending task may carry the dispatcher its claim reserved (or its last attempt's) before
    // any dispatcher has taken this attempt: it has no output anywhere yet.
    while (task.status === 'pending') {
      await sleep(WAIT_FOR_DISPATCH_MS, undefined, { signal });
      task = await this.tasks.get(task.guid);
    }
    if (!isFinal(task.status)) {
      const dispatcher = await this.dispatchers.findByGuid(task.dispatcherGuid);
      const response = dispatcher
        ? await this.client.taskLogs(dispatcher, this.dispatchers.apiKeyFor(dispatcher), dispatcherTaskIdOf(task), { tail, follow: true, signal }).catch(() => null)
        : null;
      if (response?.body) {
        const decoder = new TextDecoder();
        for await (const chunk of response.body) yield decoder.decode(chunk, { stream: true });
        return;
      }
    }
    yield await this.read(task.guid, tail);
  }

  /** Where the dispatcher stored the output of the attempt known to it as `dispatcherTaskId`. */
  private async stored(dispatcherTaskId: string, tail?: number): Promise<string | null> {
    const stream = await this.storage.get(`logs/${dispatcherTaskId}.txt`);
    if (!stream) return null;
    return lastLines((await readAll(stream)).toString('utf8'), tail);
  }

  /** Pending: no output yet. Running: the dispatcher's answer (503 when it cannot be reached). */
  private async fromDispatcher(task: Task, tail?: number): Promise<string> {
    if (task.status === 'pending') return '';
    const dispatcher = await this.dispatchers.findByGuid(task.dispatcherGuid);
    if (!dispatcher) return '';
    try {
      const response = await this.client.taskLogs(dispatcher, this.dispatchers.apiKeyFor(dispatcher), dispatcherTaskIdOf(task), { tail });
      return await response.text();
    } catch (error) {
      this.logger.warn({ task: task.guid, dispatcher: dispatcher.slug, err: error }, 'Could not read task logs from the dispatcher');
      if (isFinal(task.status)) return '';
      throw new DomainError('unavailable', `The logs of this task are on dispatcher ${dispatcher.slug}, which does not answer.`);
    }
  }
}

