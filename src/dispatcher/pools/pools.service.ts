import pLimit, { Limit } from 'p-limit';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { WarmPool } from '../../shared/config/warm-pools-settings';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { AgentState, hasEnded, REPORTED_RESYNC_MS, RuntimeBackend } from '../runtime/runtime';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { TaskEntity } from '../tasks/task.entity';
import { PoolAgentEntity } from './pool-agent.entity';
import { poolAgentSpecOf } from './pool-agent-spec';
import { PoolClaims } from './pool-claims';
import { fittingPool } from './pool-fit';
import { poolClaims, poolMisses, poolRefillDuration } from './pool-metrics';
import { PoolRule, PoolsRepository } from './pools.repository';
import { agentSpecOf } from '../scheduler/agent-spec';

const REFILL_TICK_MS = 1_000;
/** Idle agents are asked about by their runtime this often (an exit pushed by the runtime is seen at once). */
const CHECK_IDLE_EVERY_TICKS = 2;
/** The same for a runtime that reports every change itself (`reportsChanges`): on the resync only. */
const RESYNC_IDLE_EVERY_TICKS = REPORTED_RESYNC_MS / REFILL_TICK_MS;
/** A refill is under way while an agent recorded this long ago or less has not asked for its claim. */
const REFILL_BOOT_MS = 60_000;
/** After a pool agent could not be started, that pool waits this long before the next try. */
const START_FAILURE_PAUSE_MS = 5_000;
/**
 * Agents of one Kubernetes pool handed to the API server at once: a drained pool's replacements
 * start together rather than one by one, yet a refill of hundreds does not take the client's
 * bucket from the task starts queued behind it. A host-local engine starts a pool's replacements
 * as it starts cold tasks, all together, so a drained pool's submits wait no longer than the same
 * number of cold ones.
 */
export const POOL_START_CONCURRENCY = 8;

/**
 * Keeps every warm pool (WARM_POOLS) at its size: this replica starts, watches and retires the
 * agents it owns, and any replica gives a fitting task to any idle agent (`assign`). An agent
 * serves one task: once claimed it never counts as idle again. Its replacement is recorded with
 * the claim and started at once; the refill round (each second, and kicked by a miss, a release
 * or an agent retired) tops up whatever the claims did not replace and shrinks what is over.
 */
@Injectable()
export class PoolsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Pools');
  private readonly refills = new SerialLoop(() => this.refill(), (error) => this.logger.error({ err: error }, 'Pool refill round failed'));
  private readonly pausedUntil = new Map<string, number>();
  private readonly starting = new Set<Promise<void>>();
  private readonly startSlots = new Map<string, Limit>();
  private closing = false;
  private timer?: NodeJS.Timeout;
  private ticks = 0;
  /** Tasks given to agents by this process: an idle check under way stops when it moves. */
  private assigned = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: PoolsRepository,
    private readonly runtimes: RuntimeRegistry,
    private readonly claims: PoolClaims,
  ) {}

  get pools(): WarmPool[] {
    return this.config.warmPools.filter((pool) => this.runtimes.get(pool.backend));
  }

  async onApplicationBootstrap(): Promise<void> {
    // A task's own agent has no pool row to retire: no statement for it.
    this.runtimes.onAfterRemove((runtimeKey, poolAgent) => (poolAgent ? this.agents.retire(runtimeKey).then(() => undefined) : Promise.resolve()));
    if (this.pools.length === 0 && this.config.warmPools.length === 0) return;
    await this.adopt().catch((error: unknown) => this.logger.warn({ err: error }, 'Could not take up the pool agents of the last run'));
    this.timer = setInterval(() => this.refills.kick(), REFILL_TICK_MS);
    this.refills.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.closing = true;
    await this.refills.stop();
    await Promise.all(this.starting);
  }

  /**
   * Gives a `starting` task to an idle agent of the pool it fits and wakes the agent's claim;
   * null when it fits no pool, or the pool has no idle agent (a miss): it then starts cold.
   */
  async assign(task: TaskEntity): Promise<PoolAgentEntity | null> {
    const pool = fittingPool(task, this.pools, { kubeNamespace: this.config.kubeNamespace, agentIsolation: this.config.agentIsolation });
    if (!pool) return null;
    const backend = this.runtimes.get(pool.backend)!;
    const ready = backend.claimFor ? (idle: PoolAgentEntity) => backend.claimFor!(idle.agentId, idle.runtimeRef!, agentSpecOf(task, this.config)) : undefined;
    // The claimed agent's replacement is recorded with the claim, unless this replica may not start one now.
    const assignment = await this.agents.assign(task.taskId, this.closing || this.paused(pool) ? pool.name : this.ruleOf(pool), ready);
    const recorded = performance.now();
    this.assigned += 1;
    if (!assignment) {
      this.refills.kick();
      poolMisses.inc({ pool: pool.name });
      return null;
    }
    const { agent, replacementId } = assignment;
    poolClaims.inc({ pool: pool.name });
    // The claim is answered first: the replacement's start (a fork on a host-local engine) comes after it.
    this.claims.announce(agent.agentId, task.taskId);
    if (replacementId) this.start(pool, [replacementId], recorded);
    else this.refills.kick();
    this.logger.log({ taskId: task.taskId, pool: pool.name, agentId: agent.agentId }, 'Task given to a warm agent');
    return agent;
  }

  /**
   * What the runtime says of a pool agent that has no task (the scheduler handles claimed ones
   * through their task): one that ended is retired and removed, and the pool refilled.
   * False when the key is no pool agent's.
   */
  async onIdleAgentState(agentId: string, state: AgentState): Promise<PoolAgentEntity | null> {
    const agent = await this.agents.findById(agentId);
    if (!agent) return null;
    if (agent.state !== 'claimed' && hasEnded(state)) await this.retireAndRemove(agent, `its agent ${state.phase === 'exited' ? `exited with ${state.exitCode}` : state.phase}`);
    return agent;
  }

  findAgent(agentId: string): Promise<PoolAgentEntity | null> {
    return this.agents.findById(agentId);
  }

  /** The task's agent vanished before it checked in: the task, still `starting`, is let go of it. */
  release(agentId: string, taskId: string): Promise<boolean> {
    this.refills.kick();
    return this.agents.release(agentId, taskId);
  }

  private async refill(): Promise<void> {
    const tick = this.ticks++;
    const live = await this.agents.live();
    const mine = live.filter((agent) => agent.owner === this.config.dispatcherInstance);
    let refilling = false;
    for (const agent of mine.filter((candidate) => candidate.state === 'idle' && !this.pools.some((pool) => pool.name === candidate.pool))) {
      await this.retireAndRemove(agent, 'its pool is no longer configured');
    }
    for (const pool of this.pools) {
      // Host-local agents serve only tasks that reach their replica's host: each replica keeps its own pool.
      // Elsewhere (Kubernetes) any replica reaches any agent, and the pool is one across replicas.
      const scope = this.runtimes.get(pool.backend)!.hostLocal ? mine : live;
      const idle = scope.filter((agent) => agent.pool === pool.name && agent.state === 'idle');
      if (idle.length > pool.size) {
        // Newest first: the oldest have loaded whatever they load and are first in line for tasks.
        for (const agent of idle.slice(pool.size).reverse()) await this.retireAndRemove(agent, `the pool shrank to ${pool.size}`);
      }
      // Short of agents, or some of them recorded lately and not booted yet.
      if (idle.length < pool.size || idle.some((agent) => !agent.readyAt && agent.createdAt.getTime() > Date.now() - REFILL_BOOT_MS)) refilling = true;
      // Full when read: no statement. Otherwise the insert counts again, and sees the claims'
      // replacements committed since the read. Recorded in this round (so the next one counts
      // them), then handed to the runtime.
      if (this.paused(pool) || idle.length >= pool.size) continue;
      this.start(pool, await this.agents.topUp(this.ruleOf(pool)), performance.now());
    }
    // After the pools are filled, and not while a refill is under way: a request to the runtime
    // per idle agent (a container engine's inspect) held up a drained pool's replacements, and
    // the claims and boots beside them, by more than a second on a busy engine. An exit the
    // runtime reports is seen at once; this is the net under it.
    if (!refilling) await this.checkIdle(mine.filter((agent) => agent.state === 'idle' && tick % this.checkIdleEvery(agent.backend) === 0));
  }

  /** After a failed start, the pool's starts wait (START_FAILURE_PAUSE_MS). */
  private paused(pool: WarmPool): boolean {
    return (this.pausedUntil.get(pool.name) ?? 0) > Date.now();
  }

  private checkIdleEvery(backend: string): number {
    return this.runtimes.get(backend)?.reportsChanges ? RESYNC_IDLE_EVERY_TICKS : CHECK_IDLE_EVERY_TICKS;
  }

  /** The pool's rule as this replica applies it: a host-local pool counts this replica's own agents. */
  private ruleOf(pool: WarmPool): PoolRule {
    const me = this.config.dispatcherInstance;
    return { pool: pool.name, size: pool.size, backend: pool.backend, owner: me, scopeOwner: this.runtimes.get(pool.backend)!.hostLocal ? me : null };
  }

  /** Hands recorded agents to the runtime, a few at a time on Kubernetes (POOL_START_CONCURRENCY). */
  private start(pool: WarmPool, agentIds: string[], recorded: number): void {
    const slots = this.startSlotsOf(pool);
    for (const agentId of agentIds) this.track(slots(() => this.startAgent(pool, agentId, recorded)));
  }

  private startSlotsOf(pool: WarmPool): Limit {
    const known = this.startSlots.get(pool.name);
    if (known) return known;
    const slots = pLimit(this.runtimes.get(pool.backend)!.hostLocal ? Number.POSITIVE_INFINITY : POOL_START_CONCURRENCY);
    this.startSlots.set(pool.name, slots);
    return slots;
  }

  private track(started: Promise<void>): void {
    this.starting.add(started);
    void started.finally(() => this.starting.delete(started));
  }

  /**
   * Recorded first (by `refill`), then handed to the runtime: a crash in between leaves a row the
   * next boot clears, never an unknown agent. One still queued when the pool paused after a failed
   * start, or the dispatcher is stopping, is retired instead.
   */
  private async startAgent(pool: WarmPool, agentId: string, recorded: number): Promise<void> {
    const backend = this.runtimes.get(pool.backend)!;
    if (this.closing || this.paused(pool)) {
      await this.agents.retire(agentId);
      return;
    }
    try {
      const ref = await backend.submit(poolAgentSpecOf(pool, agentId, this.config));
      await this.agents.setRuntimeRef(agentId, ref);
      poolRefillDuration.observe({ pool: pool.name }, (performance.now() - recorded) / 1000);
    } catch (error) {
      this.pausedUntil.set(pool.name, Date.now() + START_FAILURE_PAUSE_MS);
      this.logger.warn({ pool: pool.name, agentId, err: error }, 'A pool agent could not be started');
      await this.agents.retire(agentId);
    }
  }

  /** Stops early when a task is given to an agent meanwhile: the refill that follows goes first. */
  private async checkIdle(idle: PoolAgentEntity[]): Promise<void> {
    const assigned = this.assigned;
    for (const agent of idle) {
      if (this.assigned !== assigned) return;
      const backend = this.runtimes.get(agent.backend);
      if (!backend || !agent.runtimeRef) continue;
      const state = await backend.status(agent.agentId, agent.runtimeRef).catch(() => null);
      if (state && hasEnded(state)) await this.retireAndRemove(agent, `it ended while idle (${state.phase})`);
    }
  }

  /** Retired first (no task can be given to it after this), then stopped and removed. */
  private async retireAndRemove(agent: PoolAgentEntity, why: string): Promise<void> {
    if (!(await this.agents.retire(agent.agentId, ['idle']))) return;
    this.logger.log({ pool: agent.pool, agentId: agent.agentId }, `Pool agent retired: ${why}`);
    this.refills.kick();
    if (agent.runtimeRef) void this.runtimes.stopAndRemove({ taskId: agent.agentId, runtimeBackend: agent.backend, runtimeRef: agent.runtimeRef, runtimeOwner: agent.owner });
  }

  /**
   * After a restart: idle agents this replica started that the runtime still runs are kept;
   * those it no longer has (ended while the dispatcher was away, or never submitted) are
   * retired. Agents of claimed tasks are the scheduler's, as any task's agent.
   */
  private async adopt(): Promise<void> {
    const managed = new Map<string, { ref: string; ended: boolean }>();
    const backends = new Set(this.pools.map((pool) => pool.backend));
    for (const backend of this.runtimes.backends.filter((candidate: RuntimeBackend) => backends.has(candidate.name))) {
      for (const agent of await backend.listManaged()) managed.set(agent.taskId, { ref: agent.ref, ended: hasEnded(agent.state) });
    }
    let kept = 0;
    for (const agent of await this.agents.liveOf(this.config.dispatcherInstance)) {
      if (agent.state !== 'idle') continue;
      const known = managed.get(agent.agentId);
      if (known && !known.ended && agent.runtimeRef === known.ref) {
        kept += 1;
        continue;
      }
      // Stopped and removed only through what the runtime knows: an old process id may be another process's by now.
      if (known) await this.retireAndRemove({ ...agent, runtimeRef: known.ref }, 'it ended or changed while the dispatcher was away');
      else await this.agents.retire(agent.agentId, ['idle']);
    }
    if (kept > 0) this.logger.log({ kept }, 'Pool agents taken up after a restart');
  }
}
