import { readdirSync, readFileSync } from 'node:fs';
import { makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { killPoolAgents, makePool, poolAgentProcesses, poolAgents, waitForIdle } from '../harness/warm-pools';

// Agents run from dist/: `npm run build` first. The spawner lowers idle agents only where it may
// raise them back (CAP_SYS_NICE, as root here); elsewhere every agent keeps the spawner's priority.
jest.setTimeout(60_000);

/** The nice value of a process or thread (field 19 of /proc/PID/stat). */
function niceOf(pid: number, thread = pid): number {
  return Number(readFileSync(`/proc/${pid}/task/${thread}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[16]);
}

/** The nice values of every thread of a process (Linux keeps one per thread). */
function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((thread) => niceOf(pid, Number(thread)));
}

const mayRaise = (() => {
  const capabilities = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0';
  return ((BigInt(`0x${capabilities}`) >> 23n) & 1n) === 1n;
})();

/** A refill never takes the cores from agents at work: idle pool agents boot and wait at nice 19 (every thread of them), a claimed one works at the spawner's priority (every thread of it). */
describe('warm pool agents on the process engine: CPU priority', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { WARM_POOLS: JSON.stringify([makePool({ name: 'sleepy', image: 'agent-examples/sleep', size: 1 })]) } });
    await waitForIdle(system, 'sleepy', 1);
  });
  afterAll(async () => {
    const agents = system ? await poolAgents(system) : [];
    await system?.close();
    killPoolAgents(agents.map((agent) => agent.agent_id));
  });

  it('runs every thread of an idle agent at nice 19, and gives every thread of it its priority back when it takes a task', async () => {
    const [idle] = (await poolAgents(system)).filter((row) => row.state === 'idle');
    const [pid] = poolAgentProcesses(idle.agent_id);
    const base = niceOf(process.pid);
    // The threads its runtime started before the spawner lowered it too (Node starts its platform threads at once).
    expect(new Set(threadNices(pid))).toEqual(new Set([mayRaise ? 19 : base]));

    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '30' } });
    expect((await taskApi(system).create(request)).status).toBe(201);
    const running = await waitForStatus(system, request.task_id, ['running'], 20_000);
    expect(running).toMatchObject({ warm: true, pool: 'sleepy' });
    expect(threadNices(pid).every((nice) => nice === base)).toBe(true);
    expect((await taskApi(system).cancel(request.task_id)).status).toBe(200);
  });
});
