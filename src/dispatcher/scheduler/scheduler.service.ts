import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { AgentState, hasEnded, REPORTED_RESYNC_MS, RuntimeBackend, RuntimeUnavailableError } from '../runtime/runtime';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { inExitGrace, isFinal, TaskStatus } from '../tasks/task-state';
import { TaskSignals } from '../tasks/task-signals';
import { runtimeKeyOf, TaskEntity } from '../tasks/task.entity';
import { PoolsService } from '../pools/pools.service';
import { TaskPatch, TasksRepository, TickProbe } from '../tasks/tasks.repository';
import { outcomeOf } from './agent-outcome';
import { PendingStates } from './pending-states';
import { agentSpecOf } from './agent-spec';
import { taskAttributes } from '../../shared/tracing/task-attributes';
import { currentCarrier, inTaskSpan, storedCarrier } from '../../shared/tracing/trace-context';
import { runtimeStartDuration } from '../metrics/dispatcher-metrics';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { isDatabaseUnavailable, StartOutage, startOutageWait, startRetries, startRetryDelayMs } from './start-outages';

const TICK_MS = 500;
const WATCH_EVERY_TICKS = 4;
/** Backends that report changes themselves (Kubernetes watches, the docker engine's events) are asked about every live task on this tick: the resync. */
const RESYNC_EVERY_TICKS = REPORTED_RESYNC_MS / TICK_MS;
/** How often host-local agents are checked against their tasks (a cancel or time-out seen by another replica). */
const SWEEP_STRAYS_EVERY_TICKS = 8;
/** A task claimed as starting whose agent was never submitted (the dispatcher died in between) is started again after this. */
const ORPHAN_CLAIM_MS = 60_000;
/** Agent states applied at once: a watch that brings a thousand changes must not take every database connection. */
const STATE_CONCURRENCY = 4;

/**
 * Starts pending tasks within MAX_CONCURRENT_TASKS in arrival order, times them out,
 * and turns what the runtimes report into final states. Every deadline lives in the
 * database, so a restart picks up where the last process stopped.
 *
 * A task that arrives while a slot is free is claimed by its own insert (`insertAndClaim`)
 * and handed to its backend from there. Two loops: the start loop (woken by an ended task,
 * a task stored with no slot free, and by the timer) only
 * claims and hands the claimed tasks to their backends without waiting for them, so a
 * new task never waits behind a slow submit or the housekeeping loop (time-outs, the
 * runtime watch, stray agents), which runs on the timer alone. The timer asks the database
 * once a tick what either loop has to do (`tickProbe`: a task to claim, tasks past their
 * deadline, tasks to watch, and for the callback delivery a callback due) and wakes the start
 * loop only when there is one to claim: a dispatcher at rest sends that one statement a tick.
 */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Scheduler');
  private readonly starts = new SerialLoop(() => this.startPending(), (error) => this.logger.error({ err: error }, 'Scheduler start round failed'));
  private readonly housekeeping = new SerialLoop(() => this.tick(), (error) => this.logger.error({ err: error }, 'Scheduler round failed'));
  private readonly probes = new SerialLoop(() => this.probeTick(), (error) => this.logger.error({ err: error }, 'Scheduler tick failed'));
  /** The last tick's answers, for the housekeeping round it wakes; none before the first (that round reads for itself, as it does what the tick did not ask). */
  private probed?: TickProbe;
  /** States the runtimes reported and not yet applied. */
  private readonly reportedStates = new PendingStates();
  private readonly stateLoop = new SerialLoop(() => this.applyReportedStates(), (error) => this.logger.error({ err: error }, 'Applying agent states failed'));
  /** Submits under way, by task id: the watch leaves these tasks alone, and shutdown waits for them. */
  private readonly submitting = new Map<string, Promise<void>>();
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private ticks = 0;
  /** A task was stored here, or a final move here saw one waiting, since the last start round began. */
  private taskStored = false;
  private readonly stopping = new AbortController();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tasks: TasksRepository,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
    private readonly pools: PoolsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const backend of this.runtimes.backends) {
      backend.onStateChange((runtimeKey, state) => {
        this.reportedStates.put(runtimeKey, state);
        this.stateLoop.kick();
      });
    }
    await this.removeStrayAgents(this.runtimes.backends, { unknownToo: true }).catch((error: unknown) => this.logger.warn({ err: error }, 'Could not list agents for recovery'));
    await this.startOwnUnsubmittedClaims().catch((error: unknown) => this.logger.warn({ err: error }, 'Could not take up unstarted claims'));
    this.subscription = this.signals.schedule.subscribe((stored) => {
      this.taskStored ||= stored;
      this.starts.kick();
    });
    this.subscription.add(this.signals.claimed.subscribe((claimed) => {
      for (const task of claimed) this.startTracked(task);
    }));
    this.signals.startsHere = true;
    this.timer = setInterval(() => this.probes.kick(), TICK_MS);
    this.starts.kick();
    this.housekeeping.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    // A start waiting out an outage gives up now, its task left `starting`: the next process takes up the claim.
    this.signals.startsHere = false;
    this.stopping.abort();
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
    await Promise.all([this.probes.stop(), this.starts.stop(), this.housekeeping.stop(), this.stateLoop.stop()]);
    await Promise.all(this.submitting.values());
  }

  /**
   * The timer's one statement. A task another replica stored or a slot it freed (this one
   * hears only of its own) is found here; the housekeeping round runs on every tick, with
   * what the statement found.
   */
  private async probeTick(): Promise<void> {
    // Whether a task is to watch is asked on the ticks whose housekeeping round should watch.
    const probe = await this.tasks.tickProbe(this.config.maxConcurrentTasks, this.ticks % WATCH_EVERY_TICKS === 0 ? this.reportingBackends() : null);
    if (probe.claimable) {
      this.taskStored = true;
      this.starts.kick();
    }
    // A callback due that no signal of this process announced: the delivery round has no timer of its own.
    if (probe.callbacksDue) this.signals.deliver.next();
    this.probed = probe;
    this.housekeeping.kick();
  }

  private async tick(): Promise<void> {
    const probe = this.probed;
    this.probed = undefined;
    await this.sweepTimeouts(probe?.overdue);
    const tick = this.ticks++;
    if (tick % WATCH_EVERY_TICKS === 0) await this.watchActive(tick % RESYNC_EVERY_TICKS === 0, probe?.unwatched !== false);
    if (tick % SWEEP_STRAYS_EVERY_TICKS === SWEEP_STRAYS_EVERY_TICKS - 1) {
      await this.removeStrayAgents(this.runtimes.backends.filter((backend) => backend.hostLocal), { unknownToo: false });
    }
  }

  /**
   * Claims what capacity allows and hands each task to its backend without awaiting the
   * submit: the claimed tasks already count against MAX_CONCURRENT_TASKS (they are
   * `starting`), so the next round may claim again at once, within the limit.
   */
  private async startPending(): Promise<void> {
    const stored = this.taskStored;
    this.taskStored = false;
    // After a task was stored here, or a check-back saw one pending, there is one to claim: the lock-free look would be a round trip for nothing.
    if (!stored && !(await this.tasks.hasClaimable(this.config.maxConcurrentTasks))) return;
    const claimed = await this.tasks.claimPending(this.config.maxConcurrentTasks, this.config.dispatcherInstance);
    for (const task of claimed) this.startTracked(task);
  }

  private startTracked(task: TaskEntity): void {
    const submitted = this.submit(task).finally(() => this.submitting.delete(task.taskId));
    this.submitting.set(task.taskId, submitted);
  }

  /** An idle agent of a pool the task fits takes it; null when none does (the task starts cold). */
  private async startWarm(task: TaskEntity): Promise<string | null> {
    const agent = await this.pools.assign(task).catch((error: unknown) => {
      this.logger.warn({ taskId: task.taskId, err: error }, 'Could not give the task to a warm agent; it starts cold');
      return null;
    });
    return agent?.runtimeRef ?? null;
  }

  /** The agent's start, in a `start agent` span of the task's trace: the agent's TRACEPARENT names that span. */
  private submit(task: TaskEntity): Promise<void> {
    const attributes = taskAttributes({ taskId: task.taskId, agentImage: task.agentImage, runtimeType: task.runtimeType });
    return inTaskSpan('start agent', storedCarrier(task), { attributes }, () => this.submitTraced(task));
  }

  private async submitTraced(task: TaskEntity): Promise<void> {
    const backend = this.runtimes.get(task.runtimeType);
    try {
      if (!backend) throw new Error(`runtime backend ${task.runtimeType} is not enabled on this dispatcher`);
      if (await this.startWarm(task)) return;
      const started = performance.now();
      const ref = await this.submitThroughOutages(backend, task);
      if (ref === null) return;
      runtimeStartDuration.observe({ backend: backend.name }, (performance.now() - started) / 1000);
      // The agent runs now: a database that does not answer is waited for, or the agent would run with no task to report to.
      const status = await this.throughDatabaseOutages(task, 'record where its agent runs', () => this.tasks.setRuntimeRef(task.taskId, ref, this.config.dispatcherInstance));
      this.logger.log({ taskId: task.taskId, backend: backend.name, ref }, 'Agent submitted');
      // Cancelled while the runtime was still starting it: nobody else knew the ref to stop.
      if (status && isFinal(status)) void this.runtimes.stopAndRemove({ ...task, status, runtimeRef: ref, runtimeOwner: this.config.dispatcherInstance });
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      const reason = error instanceof Error ? error.message : String(error);
      await this.finish(task, 'failed', { exitCode: -1, errorMessage: `The agent could not be started: ${reason}` }).catch((failure: unknown) => {
        this.logger.error({ taskId: task.taskId, err: failure }, 'Could not record a failed start');
      });
    }
  }

  /**
   * Submits, waiting out a runtime that cannot be reached (an API server outage) with backoff
   * rather than failing the task; gives up (null) once the task is final, by its time-out or a
   * cancel. Should this process stop meanwhile, the claim is an orphan the next one starts.
   */
  private async submitThroughOutages(backend: RuntimeBackend, task: TaskEntity): Promise<string | null> {
    const waited = performance.now();
    for (let attempt = 0; ; attempt += 1) {
      try {
        const ref = await backend.submit(agentSpecOf(task, this.config, currentCarrier() ?? storedCarrier(task)));
        if (attempt > 0) startOutageWait.observe({ cause: 'runtime' }, (performance.now() - waited) / 1000);
        return ref;
      } catch (error) {
        if (!(error instanceof RuntimeUnavailableError)) throw error;
        await this.waitOut('runtime', task, 'The runtime is unavailable; the submit waits', error, attempt);
        if (this.stopping.signal.aborted) return null;
        const current = await this.throughDatabaseOutages(task, 'read whether it is still to start', () => this.tasks.findById(task.taskId));
        if (!current || isFinal(current.status)) return null;
      }
    }
  }

  /**
   * One database step of a start, tried again while the database cannot answer (down,
   * restarting, the connection killed, the pool exhausted, a statement time-out) for as long
   * as the task's time-out allows; past it the error is the start's. Any other error at once.
   */
  private async throughDatabaseOutages<T>(task: TaskEntity, step: string, run: () => Promise<T>): Promise<T> {
    const waited = performance.now();
    const until = task.deadlineAt ? new Date(task.deadlineAt).getTime() : Date.now() + task.timeoutSeconds * 1000;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const result = await run();
        if (attempt > 0) startOutageWait.observe({ cause: 'database' }, (performance.now() - waited) / 1000);
        return result;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || Date.now() + startRetryDelayMs(attempt) > until || this.stopping.signal.aborted) throw error;
        await this.waitOut('database', task, `The database did not answer; the start waits to ${step}`, error, attempt);
      }
    }
  }

  private async waitOut(cause: StartOutage, task: TaskEntity, message: string, error: unknown, attempt: number): Promise<void> {
    const delayMs = startRetryDelayMs(attempt);
    startRetries.inc({ cause });
    this.logger.warn({ taskId: task.taskId, err: error, retryInMs: delayMs }, message);
    const signal = this.stopping.signal;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, delayMs).unref();
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** `due`: the ids a tick found past their deadline (their rows are read again); all are looked for without it. */
  private async sweepTimeouts(due?: string[]): Promise<void> {
    if (due?.length === 0) return;
    for (const task of await this.tasks.overdue(due)) {
      await this.finish(task, 'timed_out', { exitCode: -1, errorMessage: `The task did not finish within ${task.timeoutSeconds} s.` });
    }
  }

  /**
   * Asks the runtime about every live task: adopts the running, answers the finished, fails
   * the gone. A host-local agent that another replica started is that replica's to watch:
   * this one cannot see it and would take it for gone. Tasks of a backend that reports its
   * changes itself are asked about on the resync only (and before it, only those never
   * handed to their runtime, the orphans): between resyncs its watch brings every change.
   * `unwatched` false: the tick found no such task, and none is read.
   */
  private async watchActive(resync: boolean, unwatched: boolean): Promise<void> {
    const reporting = this.reportingBackends();
    if (resync) await this.resyncReported(reporting);
    if (!unwatched) return;
    for (const task of await this.tasks.activeExcept(reporting)) {
      const backend = this.runtimes.get(task.runtimeBackend);
      if (!backend || this.submitting.has(task.taskId)) continue;
      if (!this.runtimes.reaches(task)) continue;
      if (!task.runtimeRef) {
        await this.restartOrphan(task);
        continue;
      }
      const state = await backend.status(runtimeKeyOf(task), task.runtimeRef).catch((error: unknown) => {
        this.logger.warn({ taskId: task.taskId, err: error }, 'Runtime status unavailable');
        return null;
      });
      if (state) await this.apply(task, state);
    }
  }

  private reportingBackends(): string[] {
    return this.runtimes.backends.filter((backend) => backend.reportsChanges).map((backend) => backend.name);
  }

  /**
   * The resync of backends that report their changes: each agent's state as the backend
   * knows it (from its watch cache, for a tracked agent), and the whole task loaded and
   * judged only when that state is not plainly `running`. A resync then costs a few
   * microseconds per running agent rather than a task row and a judgement each, so a
   * dispatcher holding 10,000 running agents stays near idle between changes.
   */
  private async resyncReported(backendNames: string[]): Promise<void> {
    for (const agent of await this.tasks.submittedTo(backendNames)) {
      const backend = this.runtimes.get(agent.runtimeBackend);
      if (!backend || this.submitting.has(agent.taskId) || !this.runtimes.reaches(agent)) continue;
      const state = await backend.status(runtimeKeyOf(agent), agent.runtimeRef).catch((error: unknown) => {
        this.logger.warn({ taskId: agent.taskId, err: error }, 'Runtime status unavailable');
        return null;
      });
      if (!state || state.phase === 'running') continue;
      const task = await this.tasks.findById(agent.taskId);
      if (task?.runtimeRef) await this.apply(task, state);
    }
  }

  /**
   * Claims this replica's previous process made and never submitted (it stopped in between):
   * this process has no submit in flight yet, so they are started now, not after ORPHAN_CLAIM_MS.
   */
  private async startOwnUnsubmittedClaims(): Promise<void> {
    for (const task of await this.tasks.unsubmittedClaimsOf(this.config.dispatcherInstance)) {
      if (!task.startedAt || !(await this.tasks.reclaimOrphan(task.taskId, new Date(task.startedAt)))) continue;
      this.logger.warn({ taskId: task.taskId }, 'Starting a task this replica claimed before it stopped');
      this.startTracked(task);
    }
  }

  /**
   * A task claimed as `starting` that no process has handed to its runtime for
   * ORPHAN_CLAIM_MS was claimed by a dispatcher that stopped in between: its agent never
   * ran, so it is started now (the backends take a repeated submit of one task).
   */
  private async restartOrphan(task: TaskEntity): Promise<void> {
    const claimedAt = task.startedAt ?? task.createdAt;
    if (Date.now() - new Date(claimedAt).getTime() <= ORPHAN_CLAIM_MS) return;
    if (!(await this.tasks.reclaimOrphan(task.taskId, new Date(claimedAt)))) return;
    this.logger.warn({ taskId: task.taskId }, 'Starting a task whose dispatcher stopped before it started the agent');
    this.startTracked(task);
  }

  /** Applies what the runtimes reported, STATE_CONCURRENCY tasks at a time, until nothing is left. */
  private async applyReportedStates(): Promise<void> {
    while (this.reportedStates.size > 0) {
      const batch = this.reportedStates.take();
      let next = 0;
      await Promise.all(Array.from({ length: Math.min(STATE_CONCURRENCY, batch.length) }, async () => {
        while (next < batch.length) {
          const [runtimeKey, state] = batch[next++];
          await this.onAgentState(runtimeKey, state);
        }
      }));
    }
  }

  /** `runtimeKey`: the task id of a cold agent, the agent id of a pool agent (whose task, when it has one, is found through it). */
  private async onAgentState(runtimeKey: string, state: AgentState): Promise<void> {
    try {
      const task = this.runtimes.endedTask(runtimeKey) ?? (await this.tasks.findById(runtimeKey)) ?? (await this.taskOfPoolAgent(runtimeKey, state));
      if (task) await this.apply(task, state);
    } catch (error) {
      this.logger.error({ taskId: runtimeKey, err: error }, 'Could not apply an agent state');
    }
  }

  private async taskOfPoolAgent(agentId: string, state: AgentState): Promise<TaskEntity | null> {
    const agent = await this.pools.onIdleAgentState(agentId, state);
    if (agent?.state !== 'claimed' || !agent.taskId) return null;
    const task = await this.tasks.findById(agent.taskId);
    return task?.poolAgentId === agentId ? task : null;
  }

  /**
   * A pool agent that ended after its task was given to it and before it checked in: the task
   * goes to the next idle agent or starts cold, at once; it was never the task's own failure.
   */
  private async reroute(task: TaskEntity & { poolAgentId: string }): Promise<void> {
    if (this.submitting.has(task.taskId) || !(await this.pools.release(task.poolAgentId, task.taskId))) return;
    this.logger.warn({ taskId: task.taskId, agentId: task.poolAgentId }, 'The warm agent vanished before it checked in; the task starts again');
    void this.runtimes.stopAndRemove(task);
    const released = await this.tasks.findById(task.taskId);
    if (released?.status === 'starting') this.startTracked(released);
  }

  private async apply(task: TaskEntity, state: AgentState): Promise<void> {
    if (isFinal(task.status)) {
      // The stray sweep may have removed it already, before this state was applied.
      if (state.phase === 'exited' || state.phase === 'gone') await this.runtimes.stopAndRemoveFinished(task);
      return;
    }
    if (task.status === 'pending') return;
    if (task.status === 'starting' && task.poolAgentId && hasEnded(state)) return this.reroute({ ...task, poolAgentId: task.poolAgentId });
    const outcome = outcomeOf(state, task.startedAt, { startSeconds: this.config.startGraceSeconds, pendingSeconds: this.config.kubernetes.pendingGraceSeconds });
    if (outcome) await this.finish(task, outcome.status, outcome.patch);
  }

  private async finish(task: TaskEntity, status: TaskStatus, patch: TaskPatch): Promise<void> {
    const finished = await this.tasks.transition(task.taskId, status, patch);
    if (!finished) return;
    this.logger.log({ taskId: task.taskId, status, exitCode: patch.exitCode, error: patch.errorMessage }, 'Task finished');
    this.signals.taskFinished();
    // Not awaited: a stop may wait out its 10 s grace, and the loop has other tasks to serve.
    void this.runtimes.stopAndRemove(finished);
  }

  /**
   * Agents the runtime still has whose task is final are stopped and removed: after a
   * restart (agents of unknown tasks too), and from time to time for host-local agents,
   * whose task another replica may have cancelled or timed out. The periodic sweep leaves
   * agents of unknown tasks alone: a shared engine may hold another deployment's.
   */
  private async removeStrayAgents(backends: RuntimeBackend[], options: { unknownToo: boolean }): Promise<void> {
    for (const backend of backends) {
      for (const agent of await backend.listManaged()) {
        const poolAgent = await this.pools.findAgent(agent.taskId);
        if (poolAgent?.state === 'idle') continue;
        const task = await this.tasks.findById(poolAgent?.taskId ?? agent.taskId);
        // An agent whose task is final but still within its exit grace may be tidying up after its
        // check-back: the check-back's own timer stops it when the grace is over.
        const stray = poolAgent?.state === 'gone' || (task ? isFinal(task.status) && !inExitGrace(task) : options.unknownToo);
        if (stray) {
          this.logger.log({ taskId: agent.taskId, ref: agent.ref }, 'Removing an agent of a finished or unknown task');
          // Unless its exit, applied meanwhile, removed it: the runtime's list may be older than that.
          await this.runtimes.stopAndRemoveFinished({ taskId: agent.taskId, runtimeBackend: backend.name, runtimeRef: agent.ref });
        }
      }
    }
  }
}
