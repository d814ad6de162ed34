import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { PgListener } from '../../shared/database/pg-listener';
import { DomainError } from '../../shared/errors/domain-error';
import { AGENT_KEY_CHALLENGE } from '../auth/agent-auth';
import { DERIVED_KEY, derivedKeyMatches, perTaskAgentKey, secretsEqual } from '../auth/agent-keys';
import { poolAgentKey } from './pool-keys';
import { PoolsRepository } from './pools.repository';

export const CLAIMS_CHANNEL = 'dispatcher_pool_claims';
/** A notification lost with a dropped connection is made up for by looking again this often. */
const RECHECK_MS = 5_000;

export interface ClaimAnswer {
  task_id: string;
  agent_key: string;
}

/**
 * `POST /agent/claim`: a pool agent waits here until a task is assigned to it. The replica that
 * assigns wakes its own waiters at once and the others through NOTIFY on CLAIMS_CHANNEL (the
 * payload is the agent id), so an agent may poll any replica.
 */
@Injectable()
export class PoolClaims implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('PoolClaims');
  /** Each waiter is given its task when this replica assigned it, or nothing (look it up) otherwise. */
  private readonly waiters = new Map<string, Set<(taskId?: string) => void>>();
  private listener?: PgListener;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: PoolsRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.warmPools.length === 0 || this.config.databaseEmbedded || !this.config.databaseUrl) return;
    this.listener = new PgListener(this.config.databaseUrl, CLAIMS_CHANNEL, (agentId) => (agentId ? this.wake(agentId) : this.wakeAll()), this.logger);
    await this.listener.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
    this.wakeAll();
  }

  /**
   * A task was assigned to the agent: its waiter here answers now with it (no read on the way),
   * one on another replica after the NOTIFY, from the agent's row.
   */
  announce(agentId: string, taskId: string): void {
    this.wake(agentId, taskId);
    void this.listener?.notify(agentId).catch((error: unknown) => this.logger.debug({ err: error }, 'Could not notify a claim'));
  }

  /** The claim of one agent: its task once assigned, null when `waitSeconds` pass first. */
  async claim(key: string, pool: string, agentId: string, waitSeconds: number): Promise<ClaimAnswer | null> {
    this.assertPoolKey(key, pool);
    const deadline = Date.now() + waitSeconds * 1000;
    for (let asked = 0; ; asked += 1) {
      const agent = await this.agents.findById(agentId);
      if (!agent || agent.pool !== pool) throw DomainError.notFound(`Agent ${agentId} of pool ${pool}`);
      if (asked === 0 && !agent.readyAt) await this.agents.markReady(agentId);
      if (agent.state === 'claimed' && agent.taskId) return this.answerFor(agent.taskId);
      if (agent.state === 'gone') throw DomainError.conflict(`Agent ${agentId} has been retired; it gets no task.`, { state: agent.state });
      const left = deadline - Date.now();
      if (left <= 0) return null;
      const assigned = await this.waitFor(agentId, Math.min(left, RECHECK_MS));
      if (assigned) return this.answerFor(assigned);
    }
  }

  private answerFor(taskId: string): ClaimAnswer {
    return { task_id: taskId, agent_key: perTaskAgentKey(this.config.agentKey, taskId) };
  }

  private assertPoolKey(key: string, pool: string): void {
    if (!this.config.warmPools.some((candidate) => candidate.name === pool)) throw DomainError.notFound(`Warm pool ${pool}`);
    if (derivedKeyMatches(key, poolAgentKey(this.config.agentKey, pool))) return;
    if (DERIVED_KEY.test(key) || secretsEqual(key, this.config.agentKey)) {
      throw new DomainError('permission_denied', `X-Agent-Key is not the key of pool ${pool}.`);
    }
    throw new DomainError('authentication_failed', 'X-Agent-Key is not valid.', { headers: AGENT_KEY_CHALLENGE });
  }

  /** The task assigned meanwhile when this replica assigned it; undefined after a NOTIFY or the time. */
  private waitFor(agentId: string, ms: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      const waiters = this.waiters.get(agentId) ?? new Set();
      this.waiters.set(agentId, waiters);
      const done = (taskId?: string) => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiters.get(agentId) === waiters) this.waiters.delete(agentId);
        resolve(taskId);
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  private wake(agentId: string, taskId?: string): void {
    for (const done of [...(this.waiters.get(agentId) ?? [])]) done(taskId);
  }

  private wakeAll(): void {
    for (const agentId of [...this.waiters.keys()]) this.wake(agentId);
  }
}
