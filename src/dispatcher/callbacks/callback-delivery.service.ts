import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { taskAttributes } from '../../shared/tracing/task-attributes';
import { carrierOf, forwardedTraceHeaders, inTaskSpan, TraceCarrier } from '../../shared/tracing/trace-context';
import { Subscription } from 'rxjs';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { CallbackTokenBox } from '../tasks/callback-token-box';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { TaskLogs } from '../tasks/task-logs';
import { TaskSignals } from '../tasks/task-signals';
import { isRetryable, parseRetryAfter, retryDelayMs } from './backoff';
import { CallbackPoster, PostOutcome } from './callback-poster';
import { callbackAttempts, callbackFailures } from '../metrics/dispatcher-metrics';
import { CALLBACK_DUE, OUTBOX } from './callback-due';
import { ProgressForwarder } from './progress-forwarder';

const BATCH = 10;
/** Attempts under way at once; each takes at most the poster's 10 s time-out. */
const MAX_IN_FLIGHT = 50;
/** A claimed row is hidden from other replicas this long; an attempt takes at most 10 s. */
const LEASE_SECONDS = 120;

/** A claim of outbox rows (`$2` the lease in seconds, `$3` the claimant): the rounds' and the stored output's alike. */
const CLAIM_SET = 'next_attempt_at = now() + make_interval(secs => $2), attempts = o.attempts + 1, claimed_by = $3';
const CLAIMED_ROW = 'o.id, o.task_id, o.body, o.attempts, o.created_at';
/** What an attempt needs of the callback's task, beside the claimed row. */
const TASK_FIELDS = ['callback_url', 'callback_token_sealed', 'trace_parent', 'trace_state'];
const taskFieldsOf = (alias: string): string => TASK_FIELDS.map((field) => `${alias}.${field}`).join(', ');
const FROM_TASK = taskFieldsOf('t');
const FROM_STORED = taskFieldsOf('s');

interface DueCallback {
  id: string;
  task_id: string;
  body: string;
  attempts: number;
  created_at: Date;
  callback_url: string;
  callback_token_sealed: string;
  trace_parent: string | null;
  trace_state: string | null;
}

/**
 * Delivers the outbox: claims due rows with FOR UPDATE SKIP LOCKED (so replicas never
 * send one callback at once), POSTs them, and records delivered, a retry time, or failed.
 * A row is due once its task's output is stored (see `TaskLogs`) or LOGS_WAIT_SECONDS passed
 * (`CALLBACK_DUE`). A round runs when a task ended here (`TaskSignals.deliver`), when a round
 * was full or an attempt freed room, and when the scheduler's tick finds a row due that no
 * signal announced (a backoff over, a lease of a stopped replica ended, output waited for long
 * enough, a task ended on another replica): the tick asks in the statement it sends anyway, so
 * a dispatcher at rest sends the outbox no statement of its own. A round only claims and
 * starts the attempts: a controller slow to answer one callback holds up none of the others
 * (the lease hides a claimed row while its attempt runs).
 */
@Injectable()
export class CallbackDeliveryService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Callbacks');
  private readonly loop = new SerialLoop(() => this.deliverDue(), (error) => this.logger.error({ err: error }, 'Callback delivery round failed'));
  private readonly inFlight = new Set<Promise<void>>();
  /** A round found no room for more attempts: the next attempt to end starts a round. */
  private waitingForRoom = false;
  private readonly subscriptions: Subscription[] = [];

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly poster: CallbackPoster,
    private readonly tokens: CallbackTokenBox,
    private readonly progress: ProgressForwarder,
    signals: TaskSignals,
  ) {
    this.subscriptions.push(
      signals.deliver.subscribe(() => this.loop.kick()),
      signals.controllerBack.subscribe(() => void this.retryWaiting()),
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.resumeInterrupted();
    this.loop.kick();
  }

  /**
   * Callbacks this replica was sending when it stopped (killed mid-attempt) are due now,
   * not when their lease would have ended: nobody else is sending them.
   */
  private async resumeInterrupted(): Promise<void> {
    const [rows] = (await this.db.query(
      `UPDATE ${OUTBOX} SET next_attempt_at = now(), claimed_by = NULL
       WHERE state = 'pending' AND claimed_by = $1 AND next_attempt_at > now() RETURNING id`,
      [this.config.dispatcherInstance],
    ).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'Could not resume interrupted callbacks; their lease ends them');
      return [[], 0];
    })) as [unknown[], number];
    if (rows.length > 0) this.logger.warn({ callbacks: rows.length }, 'Resuming callbacks interrupted by the last stop');
  }

  async onApplicationShutdown(): Promise<void> {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    await this.loop.stop();
    await Promise.all(this.inFlight);
  }

  private async deliverDue(): Promise<void> {
    const room = Math.min(BATCH, MAX_IN_FLIGHT - this.inFlight.size);
    if (room <= 0) {
      this.waitingForRoom = true;
      return;
    }
    const due: DueCallback[] = await this.db.query(
      `WITH claimed AS (
         UPDATE ${OUTBOX} o SET ${CLAIM_SET}
         WHERE o.id IN (SELECT due.id FROM ${OUTBOX} due WHERE ${CALLBACK_DUE}
                        ORDER BY due.next_attempt_at FOR UPDATE OF due SKIP LOCKED LIMIT $1)
         RETURNING ${CLAIMED_ROW})
       SELECT c.*, ${FROM_TASK} FROM claimed c JOIN "dispatcher"."tasks" t ON t.task_id = c.task_id`,
      [room, LEASE_SECONDS, this.config.dispatcherInstance],
    );
    for (const callback of due) this.start(callback);
    if (due.length === room) this.loop.kick();
  }

  /**
   * A final task's output is stored here: its callback is due. One statement records the
   * store (`logs_stored_at`) and claims that callback as a round would (lease, attempt,
   * claimant), and the attempt starts at once: the round the store used to wake, and its
   * claim, are spared. With no room for another attempt, or the callback not due (another
   * replica sends it, it waits out a backoff), only the store is recorded and a round looks.
   */
  async outputStored(taskId: string): Promise<void> {
    const room = this.inFlight.size < MAX_IN_FLIGHT;
    const due: DueCallback[] = await this.db.query(
      `WITH stored AS (
         UPDATE "dispatcher"."tasks" SET logs_stored_at = now() WHERE task_id = $1
         RETURNING task_id, ${TASK_FIELDS.join(', ')}),
       claimed AS (
         UPDATE ${OUTBOX} o SET ${CLAIM_SET}
         WHERE $4 AND EXISTS (SELECT 1 FROM stored)
           AND o.id IN (SELECT due.id FROM ${OUTBOX} due WHERE due.task_id = $1 AND due.state = 'pending' AND due.next_attempt_at <= now()
                        FOR UPDATE OF due SKIP LOCKED)
         RETURNING ${CLAIMED_ROW})
       SELECT c.*, ${FROM_STORED} FROM claimed c JOIN stored s ON s.task_id = c.task_id`,
      [taskId, LEASE_SECONDS, this.config.dispatcherInstance, room],
    );
    for (const callback of due) this.start(callback);
    if (due.length === 0) this.loop.kick();
  }

  /** Callbacks waiting out a backoff after failed attempts (none being sent now) become due now. */
  private async retryWaiting(): Promise<void> {
    try {
      const [rows] = (await this.db.query(
        `UPDATE ${OUTBOX} SET next_attempt_at = now()
         WHERE state = 'pending' AND last_error IS NOT NULL AND claimed_by IS NULL AND next_attempt_at > now()
         RETURNING id`,
      )) as [unknown[], number];
      if (rows.length > 0) this.logger.log({ callbacks: rows.length }, 'The controller answers again: retrying waiting callbacks now');
      this.loop.kick();
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not bring waiting callbacks forward; they keep their backoff');
    }
  }

  private start(callback: DueCallback): void {
    const attempt = this.attempt(callback)
      .catch((error: unknown) => this.logger.error({ taskId: callback.task_id, err: error }, 'Could not record a callback attempt'))
      .finally(() => {
        this.inFlight.delete(attempt);
        if (this.waitingForRoom) {
          this.waitingForRoom = false;
          this.loop.kick();
        }
      });
    this.inFlight.add(attempt);
  }

  /** Each attempt is a `send callback` span of the task's trace, so the controller's close joins it. */
  private attempt(callback: DueCallback): Promise<void> {
    const stored = carrierOf(callback.trace_parent, callback.trace_state);
    const attributes = { ...taskAttributes({ taskId: callback.task_id }), 'task.callback_attempt': callback.attempts };
    return inTaskSpan('send callback', stored, { kind: SpanKind.PRODUCER, attributes }, async (span) => {
      const outcome = await this.post(callback, stored);
      if (outcome.status !== null) span.setAttribute('http.response.status_code', outcome.status);
      if (outcome.error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
      await this.recordOutcome(callback, outcome);
    });
  }

  private async post(callback: DueCallback, stored: TraceCarrier | null): Promise<PostOutcome> {
    // The last progress report held back by the once-a-second limit goes first.
    await this.progress.settle(callback.task_id);
    try {
      return await this.poster.post(callback.callback_url, callback.body, this.tokens.open(callback.callback_token_sealed), forwardedTraceHeaders(stored));
    } catch (error) {
      return { status: null, retryAfter: null, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async recordOutcome(callback: DueCallback, outcome: PostOutcome): Promise<void> {
    const context = { taskId: callback.task_id, attempt: callback.attempts, status: outcome.status };
    callbackAttempts.inc({ outcome: outcome.error === null ? 'delivered' : 'failed' });
    if (outcome.error === null) {
      await this.record(callback.id, `state = 'delivered', delivered_at = now(), last_error = NULL, claimed_by = NULL`);
      this.logger.log(context, 'Callback delivered');
      return;
    }
    const delayMs = retryDelayMs(callback.attempts, parseRetryAfter(outcome.retryAfter));
    const expiresAt = new Date(callback.created_at).getTime() + this.config.callbackMaxAgeSeconds * 1000;
    if (!isRetryable(outcome.status)) {
      await this.record(callback.id, `state = 'failed', last_error = $2`, [outcome.error]);
      callbackFailures.inc();
      this.logger.warn({ ...context, error: outcome.error }, 'Callback refused; not retried');
    } else if (Date.now() + delayMs > expiresAt) {
      await this.record(callback.id, `state = 'failed', last_error = $2`, [`gave up after ${callback.attempts} attempts: ${outcome.error}`]);
      callbackFailures.inc();
      this.logger.warn({ ...context, error: outcome.error }, 'Callback given up (CALLBACK_MAX_AGE_SECONDS passed)');
    } else {
      await this.record(callback.id, `next_attempt_at = now() + make_interval(secs => $2::double precision / 1000), last_error = $3, claimed_by = NULL`, [delayMs, outcome.error]);
      this.logger.warn({ ...context, error: outcome.error, retry_in_ms: delayMs }, 'Callback failed; will retry');
    }
  }

  private async record(id: string, assignments: string, params: unknown[] = []): Promise<void> {
    await this.db.query(`UPDATE ${OUTBOX} SET ${assignments} WHERE id = $1`, [id, ...params]);
  }
}

/** Hands each task output stored here to the callback delivery (`CallbackDeliveryService.outputStored`). */
@Injectable()
export class DeliverWhenOutputStored {
  constructor(taskLogs: TaskLogs, delivery: CallbackDeliveryService) {
    taskLogs.onOutputStored((taskId) => delivery.outputStored(taskId));
  }
}
