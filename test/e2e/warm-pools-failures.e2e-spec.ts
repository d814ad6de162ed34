import { makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { killPoolAgents, makePool, poolAgentProcesses, poolAgents, readyPools, waitForIdle, waitForStarted } from '../harness/warm-pools';

// Agents run from dist/: `npm run build` first.
jest.setTimeout(90_000);

/** A pool agent that never claims: a task given to it waits until the agent is gone. */
const MUTE_IMAGE = 'agent-examples/mute';

describe('warm pools when agents fail or the dispatcher restarts', () => {
  let system: TestSystem;
  const seen = new Set<string>();

  beforeAll(async () => {
    system = await startTestSystem({
      role: 'dispatcher',
      env: {
        WARM_POOLS: JSON.stringify([makePool({ size: 2 }), makePool({ name: 'mute', image: MUTE_IMAGE, size: 1 })]),
        LOCAL_IMAGE_COMMANDS: JSON.stringify({ [MUTE_IMAGE]: 'sleep 3600' }),
      },
    });
    await waitForIdle(system, 'echo', 2);
    // Its agents never ask for a claim: started, never idle in /ready.
    await waitForStarted(system, 'mute', 1);
  });
  afterAll(async () => {
    const agents = system ? await poolAgents(system) : [];
    await system?.close();
    killPoolAgents([...seen, ...agents.map((agent) => agent.agent_id)]);
  });

  const idleOf = async (pool: string) => (await poolAgents(system)).filter((row) => row.pool === pool && row.state === 'idle');

  it('replaces an idle agent that dies', async () => {
    const [victim] = await idleOf('echo');
    seen.add(victim.agent_id);
    process.kill(Number(victim.runtime_ref), 'SIGKILL');
    await waitFor(async () => (await poolAgents(system)).find((row) => row.agent_id === victim.agent_id)?.state === 'gone', 10_000, 'the dead agent to be retired');
    await waitForIdle(system, 'echo', 2);
    expect((await idleOf('echo')).map((row) => row.agent_id)).not.toContain(victim.agent_id);
  });

  it('gives the task of an agent that vanished before its check-in to another agent within a second', async () => {
    const request = makeTaskRequest({ agent_image: MUTE_IMAGE, brief_key: '' });
    expect((await taskApi(system).create(request)).status).toBe(201);
    const first = await waitFor(async () => (await poolAgents(system)).find((row) => row.task_id === request.task_id), 5_000, 'the task to be given to the mute agent');
    seen.add(first.agent_id);
    const killedAt = Date.now();
    process.kill(Number(first.runtime_ref), 'SIGKILL');
    const next = await waitFor(async () => {
      const task = (await taskApi(system).get(request.task_id)).body.data;
      return task.runtime.ref && task.runtime.ref !== first.runtime_ref ? task : null;
    }, 5_000, 'the task to start on another agent', 20);
    expect(Date.now() - killedAt).toBeLessThan(1_000);
    // Not failed: the agent vanished before it checked in, so the task started again, warm or cold.
    expect(next.status).toBe('starting');
    expect((await poolAgents(system)).find((row) => row.agent_id === first.agent_id)?.state).toBe('gone');
    await taskApi(system).cancel(request.task_id);
  });

  it('keeps its idle agents over a restart, replaces those that died meanwhile, and leaks none', async () => {
    await waitForIdle(system, 'echo', 2);
    const before = await idleOf('echo');
    before.forEach((row) => seen.add(row.agent_id));
    await system.close();
    process.kill(Number(before[0].runtime_ref), 'SIGKILL');
    await system.restart();
    await waitForIdle(system, 'echo', 2);
    const after = await idleOf('echo');
    expect(after.map((row) => row.agent_id)).toContain(before[1].agent_id);
    expect(after.map((row) => row.agent_id)).not.toContain(before[0].agent_id);
    // One process per live agent, none for the retired ones.
    for (const row of await poolAgents(system)) {
      expect(poolAgentProcesses(row.agent_id).length).toBe(row.state === 'idle' ? 1 : 0);
    }
    const request = makeTaskRequest({ brief_key: '' });
    await taskApi(system).create(request);
    expect(await waitForStatus(system, request.task_id, ['completed', 'failed'], 20_000)).toMatchObject({ status: 'completed', warm: true });
  });

  it('shrinks a pool whose size was lowered', async () => {
    await waitForIdle(system, 'echo', 2);
    const before = await idleOf('echo');
    before.forEach((row) => seen.add(row.agent_id));
    system.config.warmPools.find((pool) => pool.name === 'echo')!.size = 1;
    await system.restart();
    await waitFor(async () => (await idleOf('echo')).length === 1, 10_000, 'the pool to shrink');
    const [kept] = await idleOf('echo');
    expect(kept.agent_id).toBe(before[0].agent_id);
    await waitFor(() => poolAgentProcesses(before[1].agent_id).length === 0, 15_000, 'the retired agent to stop');
    expect((await readyPools(system)).echo).toEqual({ size: 1, idle: 1 });
  });
});
