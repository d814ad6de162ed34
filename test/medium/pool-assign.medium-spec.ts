import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PoolsRepository } from '../../src/dispatcher/pools/pools.repository';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { runMigrations } from '../../src/shared/database/migrate';
import { SCHEMA_PARTS } from '../../src/shared/database/schema-parts';
import { freshDatabaseUrl } from '../harness/database';
import { sentStatements } from '../harness/pg-statements';

/** A task given to an idle agent of a warm pool: one transaction of two round trips. */
describe('PoolsRepository.assign on PostgreSQL', () => {
  let sources: DataSource[];
  let agents: PoolsRepository;

  beforeAll(async () => {
    const url = await freshDatabaseUrl();
    const options = (poolSize: number) => roleDataSourceOptions('dispatcher', { url, poolSize, migrationsRun: false }, SCHEMA_PARTS.dispatcher);
    await runMigrations(options(1));
    sources = await Promise.all([options(4), options(1)].map((each) => new DataSource(each).initialize()));
    agents = new PoolsRepository(sources[0]);
  });
  afterAll(() => Promise.all(sources.map((source) => source.destroy())));

  async function startingTask(status = 'starting'): Promise<string> {
    const taskId = randomUUID();
    await sources[0].query(
      `INSERT INTO "dispatcher"."tasks" (task_id, agent_image, runtime_type, resources, env, ports, callback_url, callback_token_sealed, timeout_seconds, request_digest, status)
       VALUES ($1, 'bench/warm', 'local', '{}', '{}', '[]', 'http://controller/cb', 'sealed', 60, 'digest', $2)`,
      [taskId, status],
    );
    return taskId;
  }

  /** Idle agents of `pool` handed to their runtime, the first one readied first. */
  async function idleAgents(pool: string, count: number, owner = 'replica-a'): Promise<string[]> {
    const rows = (await sources[0].query(
      `INSERT INTO "dispatcher"."pool_agents" (agent_id, pool, backend, owner) SELECT gen_random_uuid(), $1, 'local', $2 FROM generate_series(1, $3) RETURNING agent_id`,
      [pool, owner, count],
    )) as { agent_id: string }[];
    const ids = rows.map((row) => row.agent_id);
    for (const [i, id] of ids.entries()) {
      await agents.setRuntimeRef(id, String(1000 + i));
      if (i === 0) await agents.markReady(id);
    }
    return ids;
  }

  const agentRow = async (agentId: string) => (await sources[1].query('SELECT state, task_id FROM "dispatcher"."pool_agents" WHERE agent_id = $1', [agentId]))[0];
  const taskRow = async (taskId: string) => (await sources[1].query('SELECT pool, pool_agent_id, runtime_ref, runtime_owner FROM "dispatcher"."tasks" WHERE task_id = $1', [taskId]))[0];

  it('gives the task the readied agent and records it on the task, readied before the commit, in two round trips', async () => {
    const [readied] = await idleAgents('p1', 2);
    const taskId = await startingTask();
    let seenWhileReady: unknown;
    const sent = sentStatements();
    let agent;
    try {
      agent = await agents.assign(taskId, 'p1', async (candidate) => {
        // Another connection still sees the agent idle: nothing is committed before `ready` is done.
        seenWhileReady = { candidate: candidate.agentId, row: await agentRow(candidate.agentId) };
      });
    } finally {
      sent.stop();
    }
    expect(agent).toEqual({ agent: expect.objectContaining({ agentId: readied, state: 'claimed', taskId, runtimeRef: '1000' }), replacementId: null });
    expect(seenWhileReady).toEqual({ candidate: readied, row: { state: 'idle', task_id: null } });
    expect(sent.texts.filter((text) => !text.includes('SELECT state, task_id'))).toHaveLength(2);
    expect(await agentRow(readied)).toEqual({ state: 'claimed', task_id: taskId });
    expect(await taskRow(taskId)).toEqual({ pool: 'p1', pool_agent_id: readied, runtime_ref: '1000', runtime_owner: 'replica-a' });
  });

  it('gives no agent to a task that is no longer starting, and leaves the agent idle', async () => {
    const [only] = await idleAgents('p2', 1);
    const cancelled = await startingTask('cancelled');
    let readied = 0;
    expect(await agents.assign(cancelled, 'p2', async () => void (readied += 1))).toBeNull();
    expect(readied).toBe(1);
    expect(await agentRow(only)).toEqual({ state: 'idle', task_id: null });
    expect(await taskRow(cancelled)).toEqual({ pool: null, pool_agent_id: null, runtime_ref: null, runtime_owner: null });
    // The agent is there for the next task.
    const next = await startingTask();
    expect(await agents.assign(next, 'p2')).toMatchObject({ agent: { agentId: only, taskId: next } });
  });

  it('answers null when the pool has no idle agent, and leaves everything as it was when `ready` fails', async () => {
    expect(await agents.assign(await startingTask(), 'empty')).toBeNull();
    const [only] = await idleAgents('p3', 1);
    const taskId = await startingTask();
    await expect(agents.assign(taskId, 'p3', async () => {
      throw new Error('the runtime refused');
    })).rejects.toThrow('the runtime refused');
    expect(await agentRow(only)).toEqual({ state: 'idle', task_id: null });
    expect(await taskRow(taskId)).toMatchObject({ pool: null, pool_agent_id: null });
  });

  it('gives tasks assigned at once different agents, and the one too many none', async () => {
    const ids = await idleAgents('p4', 3);
    const tasks = await Promise.all(Array.from({ length: 4 }, () => startingTask()));
    const given = await Promise.all(tasks.map((taskId) => agents.assign(taskId, 'p4')));
    const agentIds = given.filter((assignment) => assignment !== null).map((assignment) => assignment!.agent.agentId);
    expect(agentIds.sort()).toEqual([...ids].sort());
    expect(given.filter((agent) => agent === null)).toHaveLength(1);
  });

  const idleOf = async (pool: string) => (await sources[1].query(
    `SELECT owner, count(*)::int AS idle, count(*) FILTER (WHERE runtime_ref IS NULL)::int AS not_started
     FROM "dispatcher"."pool_agents" WHERE pool = $1 AND state = 'idle' GROUP BY owner ORDER BY owner`, [pool])) as { owner: string; idle: number; not_started: number }[];
  const rule = (pool: string, size: number, scopeOwner: string | null = 'replica-a') => ({ pool, size, backend: 'local', owner: 'replica-a', scopeOwner });

  it('records the claimed agent\'s replacement with the claim, in the same two round trips, while the pool is short', async () => {
    await idleAgents('r1', 2);
    const taskId = await startingTask();
    const sent = sentStatements();
    let assignment;
    try {
      assignment = await agents.assign(taskId, rule('r1', 2));
    } finally {
      sent.stop();
    }
    expect(sent.texts).toHaveLength(2);
    expect(assignment?.replacementId).toEqual(expect.any(String));
    const replacement = (await sources[1].query('SELECT pool, backend, owner, state, runtime_ref, task_id FROM "dispatcher"."pool_agents" WHERE agent_id = $1', [assignment!.replacementId]))[0];
    expect(replacement).toEqual({ pool: 'r1', backend: 'local', owner: 'replica-a', state: 'idle', runtime_ref: null, task_id: null });
    expect(await idleOf('r1')).toEqual([{ owner: 'replica-a', idle: 2, not_started: 1 }]);
  });

  it('records no replacement while the pool holds its size without the claimed agent, or when the task took no agent', async () => {
    await idleAgents('r2', 3);
    expect(await agents.assign(await startingTask(), rule('r2', 2))).toMatchObject({ replacementId: null });
    expect(await idleOf('r2')).toEqual([{ owner: 'replica-a', idle: 2, not_started: 0 }]);
    expect(await agents.assign(await startingTask('cancelled'), rule('r2', 5))).toBeNull();
    expect(await idleOf('r2')).toEqual([{ owner: 'replica-a', idle: 2, not_started: 0 }]);
  });

  it('counts only the scope owner\'s idle agents for a host-local pool, and every replica\'s otherwise', async () => {
    await idleAgents('r3', 2, 'replica-b');
    await idleAgents('r3', 1, 'replica-a');
    // Every replica's: three idle, two once one is claimed, the size 2 held.
    expect(await agents.assign(await startingTask(), rule('r3', 2, null))).toMatchObject({ replacementId: null });
    // replica-a's own: whichever agent was claimed, replica-a has at most one idle of its own, fewer than 2.
    expect(await agents.assign(await startingTask(), rule('r3', 2))).toMatchObject({ replacementId: expect.any(String) });
  });

  it('keeps a pool drained by tasks assigned at once at its size: one replacement for each claim', async () => {
    await idleAgents('r4', 5);
    const tasks = await Promise.all(Array.from({ length: 5 }, () => startingTask()));
    const given = await Promise.all(tasks.map((taskId) => agents.assign(taskId, rule('r4', 5))));
    expect(given.every((assignment) => assignment?.replacementId)).toBe(true);
    expect(await idleOf('r4')).toEqual([{ owner: 'replica-a', idle: 5, not_started: 5 }]);
  });

  it('tops a pool up to its size by the same rule, counting what claims recorded before it', async () => {
    await idleAgents('t1', 1, 'replica-b');
    await idleAgents('t1', 1);
    // replica-a's own: one idle, three short of 4.
    expect(await agents.topUp(rule('t1', 4))).toHaveLength(3);
    expect(await idleOf('t1')).toEqual([{ owner: 'replica-a', idle: 4, not_started: 3 }, { owner: 'replica-b', idle: 1, not_started: 0 }]);
    // Every replica's: five idle, one short of 6; none when full.
    expect(await agents.topUp(rule('t1', 6, null))).toHaveLength(1);
    expect(await agents.topUp(rule('t1', 6, null))).toEqual([]);
    // A claim that recorded its replacement leaves the round nothing to add.
    expect(await agents.assign(await startingTask(), rule('t1', 6, null))).toMatchObject({ replacementId: expect.any(String) });
    expect(await agents.topUp(rule('t1', 6, null))).toEqual([]);
    // A pool over its size gets none (shrinking is the round's, agent by agent).
    expect(await agents.topUp(rule('t1', 2, null))).toEqual([]);
  });
});
