import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { tripTransaction } from '../../shared/database/round-trips';
import { PoolAgentEntity, PoolAgentState } from './pool-agent.entity';

const AGENTS = '"dispatcher"."pool_agents"';
const TASKS = '"dispatcher"."tasks"';

export interface PoolCount {
  pool: string;
  idle: number;
  claimed: number;
}

/**
 * The refill's rule for one pool as this replica applies it: while the pool has fewer idle agents
 * than its size, new ones are recorded for `owner` to start. The claim's replacement and the
 * refill round both apply it through `topUpSql`, so the rule is written once.
 */
export interface PoolRule {
  pool: string;
  /** No agent is added while the pool has this many idle agents or more. */
  size: number;
  backend: string;
  /** The replica that will start the new agents. */
  owner: string;
  /** Whose idle agents count (a host-local pool is each replica's own), or null for every replica's. */
  scopeOwner: string | null;
}

/**
 * An INSERT of the pool's missing idle agents, at most `max`, counted in the statement itself so
 * that it sees every claim and replacement committed before it. The arguments are SQL
 * placeholders (or literals); `when` is a further condition on the insert.
 */
function topUpSql(p: { pool: string; size: string; backend: string; owner: string; scopeOwner: string; max: string; when?: string }): string {
  const idle = `(SELECT count(*) FROM ${AGENTS} WHERE pool = ${p.pool} AND state = 'idle' AND (${p.scopeOwner}::text IS NULL OR owner = ${p.scopeOwner}))`;
  return `INSERT INTO ${AGENTS} (agent_id, pool, backend, owner)
          SELECT gen_random_uuid(), ${p.pool}, ${p.backend}, ${p.owner} FROM generate_series(1, LEAST(${p.max}::int, ${p.size}::int - ${idle}::int))
          ${p.when ? `WHERE ${p.when}` : ''} RETURNING agent_id`;
}

/** A task given to an agent, and the id of that agent's replacement when one was recorded. */
export interface PoolAssignment {
  agent: PoolAgentEntity;
  replacementId: string | null;
}

/** Every query of the pool agents table; each state change is one conditional UPDATE. */
@Injectable()
export class PoolsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records the agents the pool lacks by its rule, not yet handed to their runtime, in one statement; their ids. */
  async topUp(rule: PoolRule): Promise<string[]> {
    const rows = (await this.db.query(
      topUpSql({ pool: '$1', size: '$2', backend: '$3', owner: '$4', scopeOwner: '$5', max: '$2' }),
      [rule.pool, rule.size, rule.backend, rule.owner, rule.scopeOwner],
    )) as { agent_id: string }[];
    return rows.map((row) => row.agent_id);
  }

  async setRuntimeRef(agentId: string, ref: string): Promise<void> {
    await this.db.query(`UPDATE ${AGENTS} SET runtime_ref = $2 WHERE agent_id = $1`, [agentId, ref]);
  }

  findById(agentId: string): Promise<PoolAgentEntity | null> {
    return this.db.getRepository(PoolAgentEntity).findOneBy({ agentId });
  }

  /**
   * Gives the task (still `starting`) to the pool's oldest idle agent that has been handed to its
   * runtime (one already waiting on its claim first), and records the agent on the task, in one
   * transaction: another replica's claim skips the locked agent, and a task cancelled meanwhile
   * takes no agent (the statement that would record it gives the agent back instead). Null: no
   * idle agent. `ready` runs while the agent is locked and before the commit (a failure leaves
   * the agent idle). Two round trips: the transaction's start with the agent's claim, the
   * task's record with COMMIT.
   *
   * Given the pool's rule rather than its name, the commit's statement also records the claimed
   * agent's replacement by that rule (`topUp`'s, one agent at most), not yet handed to its
   * runtime: a drained pool's replacements start as their tasks are given out instead of after a
   * refill round that reads the pool again. The claim and its replacement commit together: the
   * refill round reads either both or neither.
   */
  assign(taskId: string, poolOrRule: string | PoolRule, ready: (agent: PoolAgentEntity) => Promise<void> = async () => undefined): Promise<PoolAssignment | null> {
    // A pool named alone is never short (size 0): no replacement.
    const rule = typeof poolOrRule === 'string' ? { pool: poolOrRule, size: 0, backend: null, owner: null, scopeOwner: null } : poolOrRule;
    const pool = rule.pool;
    return tripTransaction(this.db, {}, async (trips) => {
      const [[agent]] = await trips.send([{
        text: `UPDATE ${AGENTS} SET state = 'claimed', task_id = $2, claimed_at = now()
               WHERE agent_id = (SELECT agent_id FROM ${AGENTS} WHERE pool = $1 AND state = 'idle' AND runtime_ref IS NOT NULL
                                 ORDER BY ready_at IS NULL, created_at FOR UPDATE SKIP LOCKED LIMIT 1)
               RETURNING *`,
        values: [pool, taskId],
      }]);
      if (!agent) return null;
      // Before the commit: no claim can see the task until what its isolation needs is in place.
      await ready(this.toAgent(agent));
      const [[{ moved, replacement }]] = await trips.send([{
        text: `WITH moved AS (
                 UPDATE ${TASKS} SET runtime_ref = $2, runtime_owner = $3, pool = $4, pool_agent_id = $5
                 WHERE task_id = $1 AND status = 'starting' RETURNING task_id),
               given_back AS (
                 UPDATE ${AGENTS} SET state = 'idle', task_id = NULL, claimed_at = NULL
                 WHERE agent_id = $5 AND NOT EXISTS (SELECT 1 FROM moved)),
               replacement AS (${topUpSql({ pool: '$4', size: '$8', backend: '$6', owner: '$7', scopeOwner: '$9', max: '1', when: 'EXISTS (SELECT 1 FROM moved)' })})
               SELECT EXISTS (SELECT 1 FROM moved) AS moved, (SELECT agent_id FROM replacement) AS replacement`,
        values: [taskId, agent.runtime_ref, agent.owner, pool, agent.agent_id, rule.backend, rule.owner, rule.size, rule.scopeOwner],
      }], { commit: true });
      return moved ? { agent: this.toAgent(agent), replacementId: (replacement as string | null) ?? null } : null;
    });
  }

  /**
   * An agent that vanished after its task was assigned and before it checked in: the agent is
   * `gone` and the task (still `starting`) loses it, to be given to another agent or started
   * cold. False when the task has moved on (checked in, final) or was never this agent's.
   */
  release(agentId: string, taskId: string): Promise<boolean> {
    return this.db.transaction(async (manager) => {
      const [[released]] = (await manager.query(
        `UPDATE ${TASKS} SET runtime_ref = NULL, runtime_owner = NULL, pool = NULL, pool_agent_id = NULL
         WHERE task_id = $1 AND status = 'starting' AND pool_agent_id = $2 RETURNING task_id`,
        [taskId, agentId],
      )) as [unknown[], number];
      await manager.query(`UPDATE ${AGENTS} SET state = 'gone', gone_at = now() WHERE agent_id = $1 AND state <> 'gone'`, [agentId]);
      return Boolean(released);
    });
  }

  /** The agent asks for its claim: it has booted. One write, the first time only. */
  async markReady(agentId: string): Promise<void> {
    await this.db.query(`UPDATE ${AGENTS} SET ready_at = now() WHERE agent_id = $1 AND ready_at IS NULL`, [agentId]);
  }

  /** Marks the agent gone when it is in one of `from`; true when this call did. */
  async retire(agentId: string, from: PoolAgentState[] = ['idle', 'claimed']): Promise<boolean> {
    const [rows] = (await this.db.query(
      `UPDATE ${AGENTS} SET state = 'gone', gone_at = now() WHERE agent_id = $1 AND state = ANY($2) RETURNING agent_id`,
      [agentId, from],
    )) as [unknown[], number];
    return rows.length === 1;
  }

  /** Every agent that is not gone, oldest first. */
  live(): Promise<PoolAgentEntity[]> {
    return this.db.getRepository(PoolAgentEntity).createQueryBuilder('agent').where(`agent.state <> 'gone'`).orderBy('agent.created_at').getMany();
  }

  /** The agents `owner` started that are not gone, oldest first. */
  liveOf(owner: string): Promise<PoolAgentEntity[]> {
    return this.db.getRepository(PoolAgentEntity).createQueryBuilder('agent')
      .where('agent.owner = :owner', { owner }).andWhere(`agent.state <> 'gone'`)
      .orderBy('agent.created_at').getMany();
  }

  /** Idle agents (booted and waiting on their claim) and claimed ones per pool, across every replica. */
  async counts(): Promise<PoolCount[]> {
    const rows = (await this.db.query(
      `SELECT pool, count(*) FILTER (WHERE state = 'idle' AND ready_at IS NOT NULL)::int AS idle, count(*) FILTER (WHERE state = 'claimed')::int AS claimed
       FROM ${AGENTS} WHERE state <> 'gone' GROUP BY pool`,
    )) as PoolCount[];
    return rows;
  }

  /** Gone agents are kept a day for the record, then deleted. */
  async deleteGone(olderThanSeconds = 86_400): Promise<void> {
    await this.db.query(`DELETE FROM ${AGENTS} WHERE state = 'gone' AND gone_at < now() - make_interval(secs => $1)`, [olderThanSeconds]);
  }

  private toAgent(row: Record<string, unknown>): PoolAgentEntity {
    return Object.assign(new PoolAgentEntity(), {
      agentId: row.agent_id, pool: row.pool, backend: row.backend, state: row.state, taskId: row.task_id,
      runtimeRef: row.runtime_ref, owner: row.owner, createdAt: row.created_at, readyAt: row.ready_at, claimedAt: row.claimed_at, goneAt: row.gone_at,
    });
  }
}

