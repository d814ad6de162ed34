import { Inject, Injectable, Logger } from '@nestjs/common';
import { isSpanContextValid, SpanContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import pLimit from 'p-limit';
import { queueAttributes, TASK_QUEUE, taskAttributes } from '../../shared/tracing/task-attributes';
import { forwardedTraceHeaders, inTaskSpan, linkTo, storedCarrier } from '../../shared/tracing/trace-context';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { OBJECT_STORAGE, ObjectStorage } from '../../shared/storage/object-storage';
import { describeMissingDispatcher, DispatcherPool, DispatcherRequirement } from '../dispatchers/dispatcher-selection';
import { Dispatcher } from '../dispatchers/dispatchers.entity';
import { DispatchersService } from '../dispatchers/dispatchers.service';
import { deriveCallbackToken, hashCallbackToken } from './callback-token';
import { TaskRequest } from '../../shared/task-protocol/task-request';
import { isolationFields } from './task-isolation';
import { DispatcherAnswer, DispatcherClient } from './dispatcher-client';
import { taskDispatchLatency } from '../metrics/controller-metrics';
import { dispatcherTaskIdOf } from '../scheduling/dispatcher-task-id';
import { TaskRetriesService } from '../scheduling/task-retries.service';
import { Task } from './tasks.entity';
import { ArmCallback, ClaimedBatch } from '../scheduling/queue-claim';
import { DispatchAssignment, TasksRepository } from './tasks.repository';
import { EarlyBriefs } from './early-briefs';

/** Concurrent object-storage writes of inline briefs in one batch. */
const BRIEF_WRITES = 8;

/** One task's way through a batch: the dispatchers it was offered to and what they said. */
interface Attempt {
  task: Task;
  requirement: DispatcherRequirement;
  tried: Set<string>;
  failures: DispatcherAnswer[];
}

/**
 * Sends a batch of claimed pending tasks to dispatchers (CONTRACT "Workflows and controller
 * tasks"): writes their inline briefs to object storage, picks a dispatcher for each, sends
 * the requests concurrently (bounded per dispatcher), fails over to the next candidate, and
 * records the outcomes a statement per step for the whole batch. No transaction is held
 * across a call to another service.
 */
@Injectable()
export class TaskDispatchService {
  private readonly logger = new Logger(TaskDispatchService.name);
  private readonly perDispatcher = new Map<string, pLimit.Limit>();

  constructor(
    private readonly tasks: TasksRepository,
    private readonly dispatchers: DispatchersService,
    private readonly client: DispatcherClient,
    private readonly retries: TaskRetriesService,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly earlyBriefs: EarlyBriefs,
  ) {}

  /**
   * Given to each claim, which records the dispatcher it chose with the hash of this token, so
   * the offer needs no statement of its own (`send` derives the same token for the request).
   */
  readonly armCallback: ArmCallback = (dispatcherTaskId, dispatcherGuid) => hashCallbackToken(this.callbackToken(dispatcherTaskId, dispatcherGuid));

  /**
   * One `receive controller.tasks` span for the batch, linked to each task's stored context
   * (the request that stored it); each task's hand-off is then a span of its own trace.
   */
  dispatchBatch({ tasks: batch, dispatchers, held, armed }: ClaimedBatch): Promise<Set<string>> {
    const links = batch.flatMap((task) => linkTo(storedCarrier(task), { 'task.guid': task.guid }) ?? []);
    const attributes = queueAttributes('receive', { 'messaging.batch.message_count': batch.length });
    return inTaskSpan(`receive ${TASK_QUEUE}`, null, { kind: SpanKind.CONSUMER, links, attributes }, () => this.dispatchClaimed(batch, new DispatcherPool(dispatchers, held), armed));
  }

  /** The guids whose claim ended with the statement that recorded their outcome (the rest are the caller's to release). */
  private async dispatchClaimed(batch: Task[], pool: DispatcherPool, armed: ReadonlySet<string>): Promise<Set<string>> {
    const deferred = new Map<string, string>();
    // A task no online dispatcher could take waits with the reason; its brief is written
    // once one could (when no dispatcher is up, a flood of tasks costs no storage writes).
    const placeable = batch.filter((task) => {
      if (pool.pick(requirementOf(task))) return true;
      deferred.set(task.guid, describeMissingDispatcher(requirementOf(task)));
      return false;
    });
    // Written while the offers are recorded: each request waits for its own task's brief only.
    const briefs = this.writeBriefs(placeable, deferred);
    let open: Attempt[] = placeable.map((task) => ({ task, requirement: requirementOf(task), tried: new Set(), failures: [] }));
    const accepted = new Map<string, Dispatcher>();
    const refused: Attempt[] = [];
    while (open.length > 0) {
      const offers = this.offer(open, pool, deferred, refused);
      const answers = await this.send(offers, briefs, armed);
      open = [];
      for (const [attempt, dispatcher, answer] of answers) {
        if (answer === 'gone') continue;
        if (answer.kind === 'accepted') {
          accepted.set(attempt.task.guid, dispatcher);
          continue;
        }
        this.logger.warn({ task: attempt.task.guid, dispatcher: dispatcher.slug, status: answer.status }, `Dispatcher did not take the task: ${answer.message}`);
        attempt.failures.push(answer);
        open.push(attempt);
      }
    }
    const stored = new Set<string>();
    for (const [guid, written] of briefs) if (await written) stored.add(guid);
    const released = await this.tasks.deferPending(deferred, this.config.taskDispatchRetrySeconds, stored);
    for (const attempt of refused) await this.failRefused(attempt);
    for (const guid of await this.recordDispatched(accepted, new Map(placeable.map((task) => [task.guid, task.attempt])))) released.add(guid);
    return released;
  }

  /** Asks the task's dispatcher to stop it; the dispatcher's callback then closes the task. */
  async requestCancel(task: Task): Promise<DispatcherAnswer | null> {
    const dispatcher = await this.dispatchers.findByGuid(task.dispatcherGuid);
    if (!dispatcher) return null;
    return this.client.cancelTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), dispatcherTaskIdOf(task));
  }

  /**
   * Inline briefs go to object storage before any dispatcher can ask for them: whether each
   * task's brief is there (true when it had none to write). A write started when the task was
   * stored here (EarlyBriefs) is waited for; if it failed, the brief is written again. A task
   * whose brief cannot be written is not sent, and waits for the next round with the reason.
   */
  private writeBriefs(batch: Task[], deferred: Map<string, string>): Map<string, Promise<boolean>> {
    const limit = pLimit(BRIEF_WRITES);
    const write = (task: Task) => limit(async () => {
      try {
        await this.storage.put(task.briefKey, Buffer.from(task.briefPending!, 'utf8'), { contentType: 'application/json' });
        return true;
      } catch (error) {
        deferred.set(task.guid, `The brief could not be written to object storage: ${error instanceof Error ? error.message : String(error)}`);
        return false;
      }
    });
    return new Map(batch.map((task) => {
      if (task.briefPending === null) return [task.guid, Promise.resolve(true)];
      const early = this.earlyBriefs.take(task.guid);
      return [task.guid, early ? early.then((stored) => stored || write(task)) : write(task)];
    }));
  }

  /**
   * The next dispatcher for each open attempt. An attempt with none left ends here: failed
   * when every dispatcher refused the request itself (a 4xx no retry changes), else waiting
   * for the next round with the reason.
   */
  private offer(open: Attempt[], pool: DispatcherPool, deferred: Map<string, string>, refused: Attempt[]): [Attempt, Dispatcher][] {
    const offers: [Attempt, Dispatcher][] = [];
    for (const attempt of open) {
      const dispatcher = pool.pick(attempt.requirement, attempt.tried);
      if (dispatcher) {
        attempt.tried.add(dispatcher.guid);
        pool.took(dispatcher.guid);
        offers.push([attempt, dispatcher]);
      } else if (attempt.failures.length === 0) {
        deferred.set(attempt.task.guid, describeMissingDispatcher(attempt.requirement));
      } else if (attempt.failures.every((failure) => failure.kind === 'refused')) {
        refused.push(attempt);
      } else {
        deferred.set(attempt.task.guid, messagesOf(attempt.failures));
      }
    }
    return offers;
  }

  /**
   * Records each offer (the token is armed before a fast dispatcher can call back), then sends
   * each once its brief is stored; one whose brief could not be written is not sent ('gone').
   * A first offer to the dispatcher the claim chose was recorded by the claim (`armed`): a
   * cancel since then is sent after the request (recordDispatched), as one after this record is.
   */
  private async send(offers: [Attempt, Dispatcher][], briefs: Map<string, Promise<boolean>>, armed: ReadonlySet<string>): Promise<[Attempt, Dispatcher, DispatcherAnswer | 'gone'][]> {
    const tokens = new Map<string, string>();
    const recordedByClaim = new Set<string>();
    const assignments: DispatchAssignment[] = [];
    for (const [attempt, dispatcher] of offers) {
      const { guid } = attempt.task;
      // Each attempt's token is its own: an earlier attempt's late callback cannot pass for this one's.
      const token = this.callbackToken(dispatcherTaskIdOf(attempt.task), dispatcher.guid);
      tokens.set(guid, token);
      if (armed.has(guid) && attempt.tried.size === 1 && dispatcher.guid === attempt.task.dispatcherGuid) recordedByClaim.add(guid);
      else assignments.push({ guid, dispatcherGuid: dispatcher.guid, dispatcherSlug: dispatcher.slug, callbackTokenHash: hashCallbackToken(token) });
    }
    const stillPending = await this.tasks.assign(assignments);
    const batchSpan = trace.getActiveSpan()?.spanContext();
    return Promise.all(offers.map(async ([attempt, dispatcher]): Promise<[Attempt, Dispatcher, DispatcherAnswer | 'gone']> => {
      const recorded = recordedByClaim.has(attempt.task.guid) || stillPending.has(attempt.task.guid);
      if (!recorded || !(await briefs.get(attempt.task.guid))) return [attempt, dispatcher, 'gone'];
      const request = this.taskRequest(attempt.task, tokens.get(attempt.task.guid)!);
      const answer = await this.limiterOf(dispatcher)(() => this.handOver(attempt.task, dispatcher, request, batchSpan));
      return [attempt, dispatcher, answer];
    }));
  }

  /** The request to a dispatcher, in a `process controller.tasks` span of the task's own trace. */
  private handOver(task: Task, dispatcher: Dispatcher, request: TaskRequest, batchSpan: SpanContext | undefined): Promise<DispatcherAnswer> {
    const stored = storedCarrier(task);
    const attributes = queueAttributes('process', { 'messaging.message.id': task.guid, ...taskAttributes({ guid: task.guid, attempt: task.attempt, workflowId: task.workflowId, dispatcher: dispatcher.slug }) });
    const links = batchSpan && isSpanContextValid(batchSpan) ? [{ context: batchSpan }] : [];
    return inTaskSpan(`process ${TASK_QUEUE}`, stored, { kind: SpanKind.CONSUMER, attributes, links }, async (span) => {
      const answer = await this.client.submitTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), request, forwardedTraceHeaders(stored));
      if (answer.kind !== 'accepted') span.setStatus({ code: SpanStatusCode.ERROR, message: answer.message });
      return answer;
    });
  }

  /**
   * Only the attempt that was sent moves: a fast failure report may have started the next one
   * meanwhile. The move ends the task's claim too (a dispatched task holds its slot by its
   * status), so no second statement releases it; the guids moved.
   */
  private async recordDispatched(accepted: Map<string, Dispatcher>, attempts: Map<string, number>): Promise<string[]> {
    if (accepted.size === 0) return [];
    const guids = [...accepted.keys()];
    const moved = await this.tasks.transitionMany(guids, 'dispatched', {
      dispatchedAt: () => 'now()',
      deadlineAt: () => `now() + make_interval(secs => timeout_seconds)`,
      lastDispatchError: null,
      nextDispatchAt: null,
      briefPending: null,
      dispatchClaimedUntil: null,
    }, guids.map((guid) => attempts.get(guid)!), ['guid', 'createdAt', 'dispatchedAt']);
    for (const task of moved) taskDispatchLatency.observe(Math.max(0, (task.dispatchedAt!.getTime() - task.createdAt.getTime()) / 1000));
    const movedGuids = new Set(moved.map((task) => task.guid));
    this.logger.log({ tasks: moved.length }, 'Tasks dispatched');
    for (const [guid, dispatcher] of accepted) {
      if (!movedGuids.has(guid)) await this.cancelIfCancelledMeanwhile(guid, dispatcher);
    }
    return [...movedGuids];
  }

  /** A cancel that came while the request was in flight still reaches the dispatcher. */
  private async cancelIfCancelledMeanwhile(guid: string, dispatcher: Dispatcher): Promise<void> {
    const current = await this.tasks.findByGuid(guid);
    if (current?.status !== 'cancelled') return;
    const answer = await this.client.cancelTask(dispatcher, this.dispatchers.apiKeyFor(dispatcher), dispatcherTaskIdOf(current));
    if (answer.kind !== 'accepted') this.logger.warn({ task: guid, dispatcher: dispatcher.slug }, `Cancel after dispatch failed: ${answer.message}`);
  }

  /** Every dispatcher refused the request: an `infra` ending, tried again or final as the task's retry policy says. */
  private async failRefused(attempt: Attempt): Promise<void> {
    const messages = messagesOf(attempt.failures);
    await this.retries.endAttempt(attempt.task, {
      status: 'failed',
      source: 'refused',
      patch: { errorMessage: `Every dispatcher refused the task: ${messages}`, lastDispatchError: messages },
      from: ['pending'],
    });
  }

  private callbackToken(dispatcherTaskId: string, dispatcherGuid: string): string {
    return deriveCallbackToken(this.config.secretKey, dispatcherTaskId, dispatcherGuid);
  }

  private limiterOf(dispatcher: Dispatcher): pLimit.Limit {
    let limit = this.perDispatcher.get(dispatcher.guid);
    if (!limit) {
      limit = pLimit(this.config.dispatchConcurrencyPerDispatcher);
      this.perDispatcher.set(dispatcher.guid, limit);
    }
    return limit;
  }

  taskRequest(task: Task, callbackToken: string): TaskRequest {
    return {
      task_id: dispatcherTaskIdOf(task),
      agent_image: task.agentImage,
      runtime_target: { type: task.runtimeTarget.type, namespace: task.runtimeTarget.namespace ?? '' },
      resources: task.resources,
      env: task.env,
      ports: task.ports,
      brief_key: task.briefKey,
      callback_url: `${this.config.publicUrl}/api/v1/tasks/${task.guid}/callback/`,
      callback_token: callbackToken,
      timeout_seconds: task.timeoutSeconds,
      ...isolationFields(task),
      ...task.podAdditions,
      // Sent only when set, so a dispatcher that predates secret_env sees the request it knows.
      ...(Object.keys(task.secretEnv ?? {}).length > 0 ? { secret_env: task.secretEnv } : {}),
    };
  }
}

function requirementOf(task: Task): DispatcherRequirement {
  return { runtimeType: task.runtimeTarget.type, labels: task.dispatcherLabels, slug: task.requestedDispatcher, preferred: task.dispatcherGuid };
}

function messagesOf(failures: DispatcherAnswer[]): string {
  return failures.map((failure) => ('message' in failure ? failure.message : '')).join('; ');
}
