import { Check, Column, Entity, Index, PrimaryColumn, Unique } from 'typeorm';

export type PoolAgentState = 'idle' | 'claimed' | 'gone';

/**
 * One agent of a warm pool; repeats migration 1710000000800. `idle` until a task is assigned
 * (`claimed`, with its `task_id`), `gone` once stopped or lost. Never back to `idle`: an agent
 * serves one task at most.
 */
@Entity({ name: 'pool_agents' })
@Index('pool_agents_idle', ['pool', 'createdAt'], { where: `"state" = 'idle'` })
@Index('pool_agents_live_owner', ['owner', 'pool'], { where: `"state" <> 'gone'` })
@Unique('pool_agents_task_unique', ['taskId'])
@Check('pool_agents_state_check', `"state" IN ('idle', 'claimed', 'gone')`)
export class PoolAgentEntity {
  @PrimaryColumn('uuid', { name: 'agent_id', primaryKeyConstraintName: 'pool_agents_pkey' }) agentId: string;
  @Column('text') pool: string;
  @Column('text') backend: string;
  @Column('text', { default: 'idle' }) state: PoolAgentState;
  @Column('uuid', { name: 'task_id', nullable: true }) taskId: string | null;
  /** The runtime's reference (pid, container name, Job), known once submitted. */
  @Column('text', { name: 'runtime_ref', nullable: true }) runtimeRef: string | null;
  /** DISPATCHER_INSTANCE of the replica that started it. */
  @Column('text') owner: string;
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' }) createdAt: Date;
  /** When the agent first asked for its claim: it has booted and waits (until then a task given to it waits for its boot). */
  @Column('timestamptz', { name: 'ready_at', nullable: true }) readyAt: Date | null;
  @Column('timestamptz', { name: 'claimed_at', nullable: true }) claimedAt: Date | null;
  @Column('timestamptz', { name: 'gone_at', nullable: true }) goneAt: Date | null;
}
