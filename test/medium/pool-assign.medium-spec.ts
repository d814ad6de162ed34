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
  async function idleAgents(pool: string, count: number): Promise<string[]> {
    const ids = await agents.insertMany({ name: pool, backend: 'local' }, count, 'replica-a');
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
      agent = await agents.assign('p1', taskId, async (candidate) => {
        // Another connection still sees the agent idle: nothing is committed before `ready` is done.
        seenWhileReady = { candidate: candidate.agentId, row: await agentRow(candidate.agentId) };
      });
    } finally {
      sent.stop();
    }
    expect(agent).toMatchObject({ agentId: readied, state: 'claimed', taskId, runtimeRef: '1000' });
    expect(seenWhileReady).toEqual({ candidate: readied, row: { state: 'idle', task_id: null } });
    expect(sent.texts.filter((text) => !text.includes('SELECT state, task_id'))).toHaveLength(2);
    expect(await agentRow(readied)).toEqual({ state: 'claimed', task_id: taskId });
    expect(await taskRow(taskId)).toEqual({ pool: 'p1', pool_agent_id: readied, runtime_ref: '1000', runtime_owner: 'replica-a' });
  });

  it('gives no agent to a task that is no longer starting, and leaves the agent idle', async () => {
    const [only] = await idleAgents('p2', 1);
    const cancelled = await startingTask('cancelled');
    let readied = 0;
    expect(await agents.assign('p2', cancelled, async () => void (readied += 1))).toBeNull();
    expect(readied).toBe(1);
    expect(await agentRow(only)).toEqual({ state: 'idle', task_id: null });
    expect(await taskRow(cancelled)).toEqual({ pool: null, pool_agent_id: null, runtime_ref: null, runtime_owner: null });
    // The agent is there for the next task.
    const next = await startingTask();
    expect(await agents.assign('p2', next)).toMatchObject({ agentId: only, taskId: next });
  });

  it('answers null when the pool has no idle agent, and leaves everything as it was when `ready` fails', async () => {
    expect(await agents.assign('empty', await startingTask())).toBeNull();
    const [only] = await idleAgents('p3', 1);
    const taskId = await startingTask();
    await expect(agents.assign('p3', taskId, async () => {
      throw new Error('the runtime refused');
    })).rejects.toThrow('the runtime refused');
    expect(await agentRow(only)).toEqual({ state: 'idle', task_id: null });
    expect(await taskRow(taskId)).toMatchObject({ pool: null, pool_agent_id: null });
  });

  it('gives tasks assigned at once different agents, and the one too many none', async () => {
    const ids = await idleAgents('p4', 3);
    const tasks = await Promise.all(Array.from({ length: 4 }, () => startingTask()));
    const given = await Promise.all(tasks.map((taskId) => agents.assign('p4', taskId)));
    const agentIds = given.filter((agent) => agent !== null).map((agent) => agent!.agentId);
    expect(agentIds.sort()).toEqual([...ids].sort());
    expect(given.filter((agent) => agent === null)).toHaveLength(1);
  });
});
