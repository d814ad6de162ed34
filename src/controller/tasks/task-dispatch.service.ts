import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { Dispatcher } from '../dispatchers/dispatchers.entity';
import { DispatchersService } from '../dispatchers/dispatchers.service';
import { deriveCallbackToken, hashCallbackToken } from './callback-signature';
import { DispatcherAnswer, DispatcherClient, DispatcherTaskRequest } from './dispatcher-client';
import { Task } from './tasks.entity';

/** How long one replica may hold a pending task while it offers it to dispatchers. */
const CLAIM_SECONDS = 120;

/**
 * Sends pending tasks to dispatchers (CONTRACT "Workflows and controller tasks"). No
 * transaction is held across an HTTP call: each step is one conditional UPDATE.
 */
@Injectable()
export class TaskDispatchService {
  private readonly logger = new Logger(TaskDispatchService.name);

  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dispatchers: DispatchersService,
    private readonly client: DispatcherClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Offers a pending task to each candidate in turn until one accepts it. */
  async dispatch(guid: string): Promise<void> {
    if (!(await this.claim(guid))) return;
    try {
      const task = await this.tasks.findOneByOrFail({ guid });
      const candidates = await this.dispatchers.candidatesFor({
        runtimeType: task.runtimeTarget.type,
        labels: task.dispatcherLabels,
        slug: task.requestedDispatcher,
      });
      if (candidates.length === 0) {
        await this.keepPending(guid, describeMissingDispatcher(task));
        return;
      }
      const failures: DispatcherAnswer[] = [];
      for (const dispatcher of candidates) {
        const answer = await this.sendTo(task, dispatcher);
        if (answer === 'gone' || answer.kind === 'accepted') return;
        this.logger.warn({ task: guid, dispatcher: dispatcher.slug, status: answer.status }, `Dispatcher did not take the task: ${answer.message}`);
        failures.push(answer);
      }
      await this.afterEveryCandidateFailed(guid, failures);
    } finally {
      await this.tasks.update({ guid }, { dispatchClaimedUntil: null });
    }
  }

  /** The pending tasks due for another try, oldest first. */
  async duePending(limit: number): Promise<string[]> {
    const rows = await this.tasks
      .createQueryBuilder('task')
      .select('task.guid', 'guid')
      .where('task.status = :status', { status: 'pending' })
      .andWhere('(task.next_dispatch_at IS NULL OR task.next_dispatch_at <= now())')
      .andWhere('(task.dispatch_claimed_until IS NULL OR task.dispatch_claimed_until < now())')
      .orderBy('task.created_at', 'ASC')
      .limit(limit)
      .getRawMany<{ guid: string }>();
    return rows.map((row) => row.guid);
  }

  /** Asks the task's dispatcher to stop it; the dispatcher's callback then closes the task. */
  async requestCancel(task: Task): Promise<DispatcherAnswer | null> {
    const dispatcher = await this.dispatchers.findByGuid(task.dispatcherGuid);
    if (!dispatcher) return null;
    return this.client.cancelTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), task.guid);
  }

  private async claim(guid: string): Promise<boolean> {
    const result = await this.tasks
      .createQueryBuilder()
      .update()
      .set({ dispatchClaimedUntil: () => `now() + interval '${CLAIM_SECONDS} seconds'` })
      .where('guid = :guid AND status = :status', { guid, status: 'pending' })
      .andWhere('(dispatch_claimed_until IS NULL OR dispatch_claimed_until < now())')
      .execute();
    return result.affected === 1;
  }

  private async sendTo(task: Task, dispatcher: Dispatcher): Promise<DispatcherAnswer | 'gone'> {
    const callbackToken = deriveCallbackToken(this.config.secretKey, task.guid, dispatcher.guid);
    // The token is armed before the request: a fast dispatcher may call back before it answers.
    const armed = await this.tasks
      .createQueryBuilder()
      .update()
      .set({
        callbackTokenHash: hashCallbackToken(callbackToken),
        dispatcherGuid: dispatcher.guid,
        dispatcherSlug: dispatcher.slug,
        dispatchAttempts: () => 'dispatch_attempts + 1',
      })
      .where('guid = :guid AND status = :status', { guid: task.guid, status: 'pending' })
      .execute();
    if (armed.affected !== 1) return 'gone';

    const answer = await this.client.submitTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), this.taskRequest(task, callbackToken));
    if (answer.kind !== 'accepted') return answer;

    const moved = await this.tasks
      .createQueryBuilder()
      .update()
      .set({
        status: 'dispatched',
        dispatchedAt: () => 'now()',
        deadlineAt: () => `now() + timeout_seconds * interval '1 second'`,
        lastDispatchError: null,
        nextDispatchAt: null,
      })
      .where('guid = :guid AND status = :status', { guid: task.guid, status: 'pending' })
      .execute();
    await this.dispatchers.adjustActiveTasks(dispatcher.guid, 1);
    this.logger.log({ task: task.guid, dispatcher: dispatcher.slug }, 'Task dispatched');
    if (moved.affected !== 1) await this.cancelIfCancelledMeanwhile(task.guid, dispatcher);
    return answer;
  }

  /** A cancel that came while the request was in flight still reaches the dispatcher. */
  private async cancelIfCancelledMeanwhile(guid: string, dispatcher: Dispatcher): Promise<void> {
    const current = await this.tasks.findOneBy({ guid });
    if (current?.status !== 'cancelled') return;
    const answer = await this.client.cancelTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), guid);
    if (answer.kind !== 'accepted') this.logger.warn({ task: guid, dispatcher: dispatcher.slug }, `Cancel after dispatch failed: ${answer.message}`);
  }

  taskRequest(task: Task, callbackToken: string): DispatcherTaskRequest {
    return {
      task_id: task.guid,
      agent_image: task.agentImage,
      runtime_target: { type: task.runtimeTarget.type, namespace: task.runtimeTarget.namespace ?? '' },
      resources: task.resources,
      env: task.env,
      ports: task.ports,
      brief_key: task.briefKey,
      callback_url: `${this.config.publicUrl}/api/v1/tasks/${task.guid}/callback/`,
      callback_token: callbackToken,
      timeout_seconds: task.timeoutSeconds,
    };
  }

  /**
   * Every dispatcher refused the request itself (a 4xx no retry changes): the task fails with
   * their reason. Otherwise it stays pending for the next round.
   */
  private async afterEveryCandidateFailed(guid: string, failures: DispatcherAnswer[]): Promise<void> {
    const messages = failures.map((failure) => ('message' in failure ? failure.message : '')).join('; ');
    if (failures.every((failure) => failure.kind === 'refused')) {
      await this.tasks
        .createQueryBuilder()
        .update()
        .set({ status: 'failed', finishedAt: () => 'now()', errorMessage: `Every dispatcher refused the task: ${messages}`, lastDispatchError: messages })
        .where('guid = :guid AND status = :status', { guid, status: 'pending' })
        .execute();
      return;
    }
    await this.keepPending(guid, messages);
  }

  private async keepPending(guid: string, reason: string): Promise<void> {
    await this.tasks
      .createQueryBuilder()
      .update()
      .set({
        lastDispatchError: reason,
        nextDispatchAt: () => `now() + interval '${this.config.taskDispatchRetrySeconds} seconds'`,
      })
      .where('guid = :guid AND status = :status', { guid, status: 'pending' })
      .execute();
  }
}

function describeMissingDispatcher(task: Task): string {
  const labels = Object.entries(task.dispatcherLabels).map(([key, value]) => `${key}=${value}`);
  return [
    `No online dispatcher offers the runtime "${task.runtimeTarget.type}"`,
    labels.length ? ` with labels ${labels.join(', ')}` : '',
    task.requestedDispatcher ? ` under the slug "${task.requestedDispatcher}"` : '',
    '; the task waits for one.',
  ].join('');
}
