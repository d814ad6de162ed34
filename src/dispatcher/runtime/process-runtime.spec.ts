import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ProcessRuntime } from './process-runtime';
import { AgentSpec, AgentState } from './runtime';
import { SpawnerClient } from './spawner-client';
import { SpawnerRequest } from './spawner-protocol';
import { DEFAULT_AGENT_ISOLATION } from '../../shared/task-protocol/isolation';

// The spawner runs from dist/ (dist/src/dispatcher/runtime/process-spawner.js): `npm run build` first.
const COMMANDS = { 'test/hello': 'echo hello agent', 'test/false': 'false', 'test/sleep': 'sleep 30', 'test/env': 'env' };

function makeRuntime(dataDir = mkdtempSync(path.join(tmpdir(), 'process-runtime-'))) {
  return { runtime: new ProcessRuntime({ localImageCommands: COMMANDS, dataDir }), dataDir };
}

const spec = (image: string, taskId = `task-${Math.random().toString(16).slice(2)}`): AgentSpec => ({
  taskId, image, namespace: '', env: { TASK_ID: taskId, SECRET_LOOKING: 'x' }, resources: { cpu: '1', memory: '1Gi' }, ports: [], timeoutSeconds: 60, isolation: DEFAULT_AGENT_ISOLATION,
});

function nextExit(runtime: ProcessRuntime, taskId: string): Promise<AgentState> {
  return new Promise((resolve) => runtime.onStateChange((id, state) => id === taskId && resolve(state)));
}

describe('the process engine', () => {
  it('maps the example agents by default and refuses an unmapped image', () => {
    const { runtime } = makeRuntime();
    expect(runtime.commandFor('agent-examples/echo')).toBe('node dist/src/examples/echo.js');
    expect(runtime.commandFor('agent-examples/sleep:latest')).toBe('node dist/src/examples/sleep.js');
    expect(runtime.validate({ image: 'test/hello' })).toEqual({});
    expect(runtime.validate({ image: 'nobody/else' })).toEqual({ agent_image: [expect.stringContaining('LOCAL_IMAGE_COMMANDS')] });
  });

  it('runs the command without a shell, reports the exit and keeps the output after the process and the runtime are gone', async () => {
    const { runtime, dataDir } = makeRuntime();
    const agent = spec('test/hello');
    const exited = nextExit(runtime, agent.taskId);
    const ref = await runtime.submit(agent);
    expect(await exited).toEqual({ phase: 'exited', exitCode: 0 });
    expect(await runtime.status(agent.taskId, ref)).toEqual({ phase: 'exited', exitCode: 0 });
    expect(await runtime.logs(agent.taskId, ref)).toBe('hello agent\n');
    await runtime.remove(agent.taskId, ref);
    await runtime.close();
    const later = makeRuntime(dataDir).runtime;
    expect(await later.logs(agent.taskId, ref, 1)).toBe('hello agent\n');
    expect(await later.status(agent.taskId, ref)).toMatchObject({ phase: 'gone', message: expect.stringContaining(`process ${ref} is gone`) });
  });

  it('refuses a start while its log folder cannot be made, and makes it at the next start', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'process-runtime-'));
    writeFileSync(path.join(dataDir, 'agent-logs'), 'a file where the folder goes');
    const { runtime } = makeRuntime(dataDir);
    await expect(runtime.submit(spec('test/hello'))).rejects.toThrow();
    rmSync(path.join(dataDir, 'agent-logs'));
    const agent = spec('test/hello');
    const exited = nextExit(runtime, agent.taskId);
    const ref = await runtime.submit(agent);
    await exited;
    expect(await runtime.logs(agent.taskId, ref)).toBe('hello agent\n');
    await runtime.remove(agent.taskId, ref);
    expect(readFileSync(path.join(dataDir, 'agent-logs', `${agent.taskId}.log`), 'utf8')).toBe('hello agent\n');
  });

  it('reports a non-zero exit code', async () => {
    const { runtime } = makeRuntime();
    const agent = spec('test/false');
    const exited = nextExit(runtime, agent.taskId);
    await runtime.submit(agent);
    expect(await exited).toEqual({ phase: 'exited', exitCode: 1 });
  });

  it('gives the agent its env and only harmless parts of the dispatcher\'s own', async () => {
    process.env.API_KEY_OF_DISPATCHER = 'must-not-leak';
    const { runtime } = makeRuntime();
    const agent = spec('test/env');
    const exited = nextExit(runtime, agent.taskId);
    const ref = await runtime.submit(agent);
    await exited;
    const output = await runtime.logs(agent.taskId, ref);
    expect(output).toContain(`TASK_ID=${agent.taskId}`);
    expect(output).toContain('PATH=');
    expect(output).not.toContain('must-not-leak');
  });

  it('stops with SIGTERM and lists what it runs', async () => {
    const { runtime } = makeRuntime();
    const first = spec('test/sleep');
    const second = spec('test/sleep');
    const firstRef = await runtime.submit(first);
    const secondRef = await runtime.submit(second);
    expect(await runtime.status(first.taskId, firstRef)).toEqual({ phase: 'running' });
    expect((await runtime.listManaged()).map((agent) => agent.taskId).sort()).toEqual([first.taskId, second.taskId].sort());
    await runtime.stop(first.taskId, firstRef);
    expect(await runtime.status(first.taskId, firstRef)).toEqual({ phase: 'exited', exitCode: 143 });
    await runtime.stop(second.taskId, secondRef);
    await runtime.close();
  });

  it('stops and removes an agent whose end the spawner pushed with one request, the removal, which takes its exit file', async () => {
    const { runtime, dataDir, agent, ref } = await endedAgent();
    const exitFile = path.join(dataDir, 'agent-logs', `${agent.taskId}.exit`);
    expect(existsSync(exitFile)).toBe(true);
    const requests = spawnerRequests(runtime);
    await runtime.stop(agent.taskId, ref);
    await runtime.remove(agent.taskId, ref);
    expect(requests.map((request) => request.op)).toEqual(['forget']);
    expect(existsSync(exitFile)).toBe(false);
    expect(await runtime.logs(agent.taskId, ref)).toBe('hello agent\n');
    await runtime.close();
  });

  it('asks the spawner once to stop an agent that ended while no runtime of this process was told', async () => {
    const { runtime, dataDir, agent, ref } = await endedAgent();
    await runtime.close();
    const later = makeRuntime(dataDir).runtime;
    const requests = spawnerRequests(later);
    await later.stop(agent.taskId, ref);
    await later.remove(agent.taskId, ref);
    expect(requests.map((request) => request.op)).toEqual(['stop', 'forget']);
    expect(await later.listManaged()).toEqual([]);
    await later.close();
  });

  it('stops only the process its ref names: another of the task\'s pid is not the spawner\'s agent', async () => {
    const { runtime, agent, ref } = await runningSleeper();
    const stranger = spawn('sleep', ['30'], { stdio: 'ignore' });
    const strangerEnded = new Promise((resolve) => stranger.once('exit', (_code, signal) => resolve(signal)));
    await runtime.stop(agent.taskId, String(stranger.pid));
    expect(await strangerEnded).toBe('SIGTERM');
    expect(await runtime.status(agent.taskId, ref)).toEqual({ phase: 'running' });
    await stopsWithSigterm(runtime, agent.taskId, ref);
  });

  it('stops an agent through a spawner of an older build, whose stop answers no agents', async () => {
    const { runtime, agent, ref } = await runningSleeper();
    spawnerRequests(runtime, (sent, answer) => (sent.op === 'stop' ? { id: answer.id, ok: true } : answer));
    await stopsWithSigterm(runtime, agent.taskId, ref);
  });

  it('answers a request sent behind a burst of spawns before the burst is done', async () => {
    const { runtime } = makeRuntime();
    const first = spec('test/sleep');
    const firstRef = await runtime.submit(first);
    const spawnerPid = parentOf(Number(firstRef));
    const burst = Array.from({ length: 20 }, () => spec('test/sleep'));
    const spawned = burst.map((agent) => runtime.submit(agent));
    await new Promise((resolve) => setImmediate(resolve)); // the spawn requests are written first
    expect(await runtime.status(first.taskId, firstRef)).toEqual({ phase: 'running' });
    // Answered while most of the burst is still to be started (all twenty were, before the answer, when spawns ran back to back).
    expect(childrenOf(spawnerPid).length).toBeLessThan(11);
    const refs = await Promise.all(spawned);
    expect(childrenOf(spawnerPid).length).toBe(21);
    await Promise.all([first, ...burst].map((agent, index) => runtime.stop(agent.taskId, [firstRef, ...refs][index])));
    await runtime.close();
  });

  it('starts agents from a spawner of their own, which they and it outlive the runtime, and which a new runtime finds again', async () => {
    const { runtime, dataDir } = makeRuntime();
    const agent = spec('test/sleep');
    const ref = await runtime.submit(agent);
    const parent = parentOf(Number(ref));
    expect(parent).not.toBe(process.pid);
    expect(readFileSync(`/proc/${parent}/cmdline`, 'utf8')).toContain('process-spawner.js');
    await runtime.close();

    const later = makeRuntime(dataDir).runtime;
    expect(await later.status(agent.taskId, ref)).toEqual({ phase: 'running' });
    expect(await later.listManaged()).toEqual([{ taskId: agent.taskId, ref, state: { phase: 'running' } }]);
    const exited = nextExit(later, agent.taskId);
    await later.stop(agent.taskId, ref);
    expect(await exited).toEqual({ phase: 'exited', exitCode: 143, reason: 'killed by SIGTERM' });
    await later.remove(agent.taskId, ref);
    expect(await later.listManaged()).toEqual([]);
    await later.close();
  });

  it('starts the spawner anew when it is gone, and still answers for an agent it started before', async () => {
    const { runtime, dataDir } = makeRuntime();
    const sleeper = spec('test/sleep');
    const sleeperRef = await runtime.submit(sleeper);
    const spawnerPid = parentOf(Number(sleeperRef));
    await runtime.stop(sleeper.taskId, sleeperRef);
    const agent = spec('test/hello');
    const exited = nextExit(runtime, agent.taskId);
    const ref = await runtime.submit(agent);
    await exited;
    await runtime.close();
    process.kill(spawnerPid, 'SIGKILL');
    while (existsSync(`/proc/${spawnerPid}`) && !readFileSync(`/proc/${spawnerPid}/stat`, 'utf8').includes(') Z')) await new Promise((resolve) => setTimeout(resolve, 20));

    const later = makeRuntime(dataDir).runtime;
    // The exit was recorded in a file beside the log: the new spawner need not have seen it.
    expect(await later.status(agent.taskId, ref)).toEqual({ phase: 'exited', exitCode: 0 });
    const next = spec('test/sleep');
    const nextRef = await later.submit(next);
    expect(parentOf(Number(nextRef))).not.toBe(spawnerPid);
    await later.stop(next.taskId, nextRef);
    await later.close();
  });
});

/** A runtime of its own whose one agent has ended, its end pushed by the spawner. */
async function endedAgent(): Promise<{ runtime: ProcessRuntime; dataDir: string; agent: AgentSpec; ref: string }> {
  const { runtime, dataDir } = makeRuntime();
  const agent = spec('test/hello');
  const exited = nextExit(runtime, agent.taskId);
  const ref = await runtime.submit(agent);
  await exited;
  return { runtime, dataDir, agent, ref };
}

/** A runtime of its own with one agent running for 30 s. */
async function runningSleeper(): Promise<{ runtime: ProcessRuntime; agent: AgentSpec; ref: string }> {
  const { runtime } = makeRuntime();
  const agent = spec('test/sleep');
  return { runtime, agent, ref: await runtime.submit(agent) };
}

/** Stops the agent, which ends by SIGTERM (143), and closes the runtime. */
async function stopsWithSigterm(runtime: ProcessRuntime, taskId: string, ref: string): Promise<void> {
  await runtime.stop(taskId, ref);
  expect(await runtime.status(taskId, ref)).toEqual({ phase: 'exited', exitCode: 143 });
  await runtime.close();
}

type Answer = Awaited<ReturnType<SpawnerClient['request']>>;

/** Records the requests the runtime sends its spawner from now on; they still go to it, and `answerOf` may change what comes back. */
function spawnerRequests(runtime: ProcessRuntime, answerOf: (sent: SpawnerRequest, answer: Answer) => Answer = (_sent, answer) => answer): SpawnerRequest[] {
  const client = (runtime as unknown as { spawner: SpawnerClient }).spawner;
  const request = client.request.bind(client);
  const sent: SpawnerRequest[] = [];
  jest.spyOn(client, 'request').mockImplementation(async (next) => {
    sent.push(next);
    return answerOf(next, await request(next));
  });
  return sent;
}

/** The live children of `pid`, read in one go from /proc (the spawner goes on forking meanwhile). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
}

/** The parent process id, from /proc (the command name may hold spaces and parentheses). */
function parentOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1]);
}
