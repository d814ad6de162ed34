import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { DispatchersService } from '../dispatchers/dispatchers.service';
import { ClaimedBatch, QueueClaim, RoundProbe } from '../scheduling/queue-claim';
import { SupersededCancels } from '../scheduling/superseded-cancels';
import { TaskRetriesService } from '../scheduling/task-retries.service';
import { TaskDispatchService } from './task-dispatch.service';
import { TaskWakeups } from './task-wakeups';
import { EarlyBriefs } from './early-briefs';
import { TasksRepository } from './tasks.repository';

/** Batches one process sends at once; more claimed tasks wait in the table, not in memory. */
const BATCHES_IN_FLIGHT = 4;

export const NO_DISPATCHER_ONLINE = 'No dispatcher is online; the task waits for one.';
const IDLE_RECHECK_MS = 1000;
/** Each round looks back this far before the last one's start, for inserts that committed late. */
const NOTE_OVERLAP_MS = 5000;

/**
 * The controller's dispatch loop. Woken at once when a task is stored (here, or by another
 * replica through LISTEN/NOTIFY) and every TASK_DISPATCH_RETRY_SECONDS otherwise, each round
 * runs the watchdog when it is due, sends the cancels `cancel_in_progress` decided, then
 * claims from the queue (scheduling/queue-claim.ts: priority, fair share, age, within each
 * dispatcher's free slots and each concurrency key's limit) in batches and sets each batch
 * going, up to BATCHES_IN_FLIGHT.
 * With no dispatcher online it claims nothing, and a dispatcher coming online wakes it.
 */
@Injectable()
export class DispatchLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DispatchLoop.name);
  private readonly loop = new SerialLoop(() => this.round(), (error) => this.logger.error({ err: error }, 'Dispatch round failed'));
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private watchdogDueAt = 0;
  /** While no dispatcher is online, rounds before this time skip the database. */
  private idleUntil = 0;
  /** Tasks created before this were given the reason they wait by an earlier round (null: none yet). */
  private notedSince: Date | null = null;
  private idleWake?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<void>>();
  /** A round stopped claiming because BATCHES_IN_FLIGHT were under way: the next batch to end starts a round. */
  private waitingForRoom = false;
  /** A task was stored by this process since the last round began: that round claims without probing first. */
  private taskStoredHere = false;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly dispatch: TaskDispatchService,
    private readonly dispatchers: DispatchersService,
    private readonly wakeups: TaskWakeups,
    private readonly queue: QueueClaim,
    private readonly superseded: SupersededCancels,
    private readonly retries: TaskRetriesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly earlyBriefs: EarlyBriefs,
  ) {}

  onApplicationBootstrap(): void {
    this.subscription = this.wakeups.pending.subscribe((stored) => {
      this.taskStoredHere ||= stored;
      this.loop.kick();
    });
    // A dispatcher that comes online here wakes every replica's loop (its tasks may be waiting).
    this.subscription.add(this.dispatchers.cameOnline.subscribe(() => {
      this.idleUntil = 0;
      this.wakeups.recheck();
    }));
    this.timer = setInterval(() => this.loop.kick(), this.config.taskDispatchRetrySeconds * 1000);
    this.timer.unref();
    this.loop.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.idleWake);
    this.subscription?.unsubscribe();
    await this.loop.stop();
    await Promise.all(this.inFlight);
  }

  private async round(): Promise<void> {
    if (Date.now() >= this.watchdogDueAt) {
      this.watchdogDueAt = Date.now() + this.config.taskDispatchRetrySeconds * 1000;
      await this.timeOutSilentTasks();
    }
    const started = new Date();
    const stored = this.taskStoredHere;
    this.taskStoredHere = false;
    const size = this.config.dispatchBatchSize;
    // A task stored here is there to claim: the claim's opening answers what the probe would.
    const first = stored && Date.now() >= this.idleUntil && this.inFlight.size < BATCHES_IN_FLIGHT
      ? await this.queue.claimProbing(size, this.config.dispatchClaimLeaseSeconds, started, this.dispatch.armCallback)
      : null;
    const probe: RoundProbe = first ? { ...first.probe, claimable: true } : await this.queue.probe(started);
    this.earlyBriefs.setDispatchersOnline(probe.online);
    if (probe.superseded) await this.superseded.sendDue();
    if (Date.now() < this.idleUntil) {
      // A wake-up while idle is put off, not lost: another replica may have seen a dispatcher come.
      this.idleWake ??= setTimeout(() => {
        this.idleWake = undefined;
        this.loop.kick();
      }, this.idleUntil - Date.now());
      return;
    }
    if (!probe.online) {
      // Nothing to send anywhere: pending tasks are not claimed, only told why they wait,
      // and the database is asked again in a second (or when a dispatcher comes online here).
      this.idleUntil = started.getTime() + IDLE_RECHECK_MS;
      await this.tasks.noteWaiting(NO_DISPATCHER_ONLINE, this.notedSince);
      this.notedSince = new Date(started.getTime() - NOTE_OVERLAP_MS);
      return;
    }
    if (!probe.claimable) return;
    for (let batch = first?.batch; this.inFlight.size < BATCHES_IN_FLIGHT; batch = undefined) {
      batch ??= await this.queue.claimBatch(size, this.config.dispatchClaimLeaseSeconds, this.dispatch.armCallback);
      if (batch.tasks.length === 0) return;
      this.start(batch);
      if (batch.tasks.length < size) return;
    }
    this.waitingForRoom = true;
  }

  /**
   * Sends a batch without holding up the loop: a dispatcher that answers slowly delays its
   * own tasks, not the next batch. When the batch is done its claims end, and the loop looks
   * again if it had stopped claiming for want of room; otherwise the round that sent it
   * already found the queue drained, and what comes next (a task stored, a slot freed by a
   * callback, a retry due) wakes a round of its own.
   */
  private start(claimed: ClaimedBatch): void {
    const batch = claimed.tasks;
    const work: Promise<void> = this.dispatch.dispatchBatch(claimed)
      .catch((error: unknown): Set<string> => {
        this.logger.error({ err: error, tasks: batch.length }, 'Dispatching a batch failed; its tasks stay pending');
        return new Set();
      })
      // Claims not ended by the statement that recorded a task's outcome (dispatched, deferred).
      .then((released) => this.tasks.releaseClaims(batch.filter((task) => !released.has(task.guid)).map((task) => task.guid)))
      .catch((error: unknown) => this.logger.warn({ err: error }, 'Could not end the claims of a batch; their lease ends them'))
      .finally(() => {
        this.inFlight.delete(work);
        if (!this.waitingForRoom) return;
        this.waitingForRoom = false;
        this.loop.kick();
      });
    this.inFlight.add(work);
  }

  /** Tasks with no final callback a grace period after their deadline are tried again or become `timed_out`. */
  private async timeOutSilentTasks(): Promise<void> {
    const grace = this.config.taskWatchdogGraceSeconds;
    const ended = await this.retries.timeOutOverdue(grace, `No callback came from the dispatcher within ${grace} s after the task's deadline.`);
    if (ended.length > 0) this.logger.warn({ tasks: ended.map((outcome) => outcome.task?.guid) }, 'Tasks timed out without a callback');
  }
}
