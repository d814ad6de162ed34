import { agentApi, makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { claimApi, killPoolAgents, makePool, poolAgents, poolKeyOf, readyPools, waitForIdle } from '../harness/warm-pools';

// Agents run from dist/: `npm run build` first.
jest.setTimeout(60_000);

describe('warm pools on the process engine', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { WARM_POOLS: JSON.stringify([makePool()]) } });
    await waitForIdle(system, 'echo', 2);
  });
  afterAll(async () => {
    const agents = system ? await poolAgents(system) : [];
    await system?.close();
    killPoolAgents(agents.map((agent) => agent.agent_id));
  });

  it('gives a fitting task to an idle agent, which checks in and completes it', async () => {
    const request = makeTaskRequest({ brief_key: '', env: { GREETING: 'warm' } });
    const created = await taskApi(system).create(request);
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ warm: false, pool: null });
    const done = await waitForStatus(system, request.task_id, ['completed', 'failed'], 20_000);
    expect(done).toMatchObject({ status: 'completed', warm: true, pool: 'echo', result_key: `results/${request.task_id}/result.json` });
    // The task's env reached the agent at check-in, never through its start.
    const logs = (await taskApi(system).logs(request.task_id)).text;
    expect(logs).toContain('warm in pool echo; waiting for a task');
    expect(logs).toContain(`task ${request.task_id} starting`);
  });

  it('gives each agent one task only and refills the pool to its size', async () => {
    const requests = [0, 1, 2].map(() => makeTaskRequest({ brief_key: '' }));
    for (const request of requests) expect((await taskApi(system).create(request)).status).toBe(201);
    const done = await Promise.all(requests.map((request) => waitForStatus(system, request.task_id, ['completed', 'failed'], 30_000)));
    expect(done.map((task) => task.status)).toEqual(['completed', 'completed', 'completed']);
    await waitForIdle(system, 'echo', 2);
    const rows = await poolAgents(system);
    const byTask = rows.filter((row) => requests.some((request) => request.task_id === row.task_id));
    // Every warm task had an agent of its own, and no agent that served a task waits for another.
    expect(new Set(byTask.map((row) => row.agent_id)).size).toBe(byTask.length);
    expect(byTask.length).toBe(done.filter((task) => task.warm).length);
    expect(rows.filter((row) => row.task_id !== null && row.state === 'idle')).toEqual([]);
    // Each claim recorded its agent's replacement in its own transaction (PostgreSQL's now() is the
    // transaction's start), rather than leaving it to the next refill round.
    const recordedAt = new Set(rows.map((row) => row.created_ms));
    expect(byTask.filter((row) => !recordedAt.has(row.claimed_ms!))).toEqual([]);
  });

  it('starts a task cold when it asks for more than the pool gives, or another image', async () => {
    const bigger = makeTaskRequest({ brief_key: '', resources: { cpu: '2', memory: '512Mi' } });
    const other = makeTaskRequest({ brief_key: '', agent_image: 'agent-examples/fail' });
    for (const request of [bigger, other]) expect((await taskApi(system).create(request)).status).toBe(201);
    const [big, failed] = await Promise.all([bigger, other].map((request) => waitForStatus(system, request.task_id, ['completed', 'failed'], 20_000)));
    expect(big).toMatchObject({ status: 'completed', warm: false, pool: null });
    expect(failed).toMatchObject({ warm: false, pool: null });
    expect(await readyPools(system)).toEqual({ echo: { size: 2, idle: 2 } });
  });

  it('reports claims, misses and idle agents by pool in the metrics', async () => {
    const metrics = (await http('GET', `${system.dispatcherUrl}/metrics`)).text;
    expect(metrics).toMatch(/^dispatcher_pool_claims_total\{pool="echo"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^dispatcher_pool_size\{pool="echo"\} 2$/m);
    expect(metrics).toMatch(/^dispatcher_pool_idle_agents\{pool="echo"\} \d+$/m);
    expect(metrics).toMatch(/^dispatcher_pool_refill_seconds_count\{pool="echo"\} [1-9]\d*$/m);
  });

  it('refuses the pool key for the task protocol, and other keys for the claim', async () => {
    const [idle] = (await poolAgents(system)).filter((row) => row.state === 'idle');
    const poolKey = poolKeyOf(system, 'echo');
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '30' } });
    await taskApi(system).create(request);
    const agent = agentApi(system, poolKey);
    expect([401, 403]).toContain((await agent.checkin({ task_id: request.task_id })).status);
    expect([401, 403]).toContain((await agent.progress({ task_id: request.task_id, percentage: 1 })).status);
    expect([401, 403]).toContain((await agent.checkback({ task_id: request.task_id, status: 'completed' })).status);
    expect([401, 403]).toContain((await agent.read(`briefs/${request.task_id}.json?task_id=${request.task_id}`)).status);

    const claim = claimApi(system, poolKey);
    expect((await claim({ pool: 'echo', agent_id: idle.agent_id })).status).toBe(204);
    expect((await claim({ pool: 'echo', agent_id: '00000000-0000-4000-8000-000000000000' })).body).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect((await claim({ pool: 'nope', agent_id: idle.agent_id })).status).toBe(404);
    expect((await claim({ pool: 'echo' })).status).toBe(400);
    expect((await claim({ pool: 'echo', agent_id: idle.agent_id }, 56)).status).toBe(400);
    const wrong = await claimApi(system, 'not-a-key')({ pool: 'echo', agent_id: idle.agent_id });
    expect(wrong.status).toBe(401);
    expect((await claimApi(system, system.agentKey)({ pool: 'echo', agent_id: idle.agent_id })).status).toBe(403);
    await taskApi(system).cancel(request.task_id);
  });
});
