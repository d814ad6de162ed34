import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DockerRuntime } from '../../src/dispatcher/runtime/docker-runtime';
import { AgentSpec, AgentState } from '../../src/dispatcher/runtime/runtime';
import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { readUntil as until } from '../harness/wait';
import { agentProtocolServer, removeManagedContainers, requireContainerEngine, SHELL_AGENT_IMAGE } from '../harness/podman';

/**
 * The engine's socket as the runtime sees it, through a relay the spec controls: it counts the
 * connections open at once, and can cut them all and refuse new ones (an engine restarting).
 */
async function engineRelay(enginePath: string): Promise<{ dockerHost: string; open: () => number; cut: () => void; restore: () => void; close: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'atc-relay-'));
  const socketPath = path.join(dir, 'engine.sock');
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    const engine = connect(enginePath);
    for (const socket of [client, engine]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => engine.destroy());
    engine.on('close', () => client.destroy());
    client.pipe(engine).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    dockerHost: `unix://${socketPath}`,
    // Each relayed connection is two sockets: the runtime's and the engine's.
    open: () => sockets.size / 2,
    cut: () => {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore: () => {
      down = false;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('docker engine backend: exits from the engine events', () => {
  const dispatcherName = `atc-exits-${randomUUID().slice(0, 8)}`;
  let docker: Docker;
  let enginePath: string;
  let relay: Awaited<ReturnType<typeof engineRelay>>;
  let fake: Awaited<ReturnType<typeof agentProtocolServer>>;
  const runtimes: DockerRuntime[] = [];

  /** A runtime through the relay, recording every state it reports. */
  function runtimeWithReports(): { runtime: DockerRuntime; reports: Array<[string, AgentState]> } {
    const runtime = new DockerRuntime({ dockerHost: relay.dockerHost, dispatcherName, network: 'host', stopGraceSeconds: 1 });
    const reports: Array<[string, AgentState]> = [];
    runtime.onStateChange((taskId, state) => reports.push([taskId, state]));
    runtimes.push(runtime);
    return { runtime, reports };
  }

  /** A shell agent that checks in and sleeps until it is stopped or killed. */
  const sleeper = (): AgentSpec => {
    const taskId = randomUUID();
    return {
      taskId, image: SHELL_AGENT_IMAGE, namespace: '', ports: [], timeoutSeconds: 60, isolation: DEFAULT_AGENT_ISOLATION,
      env: { TASK_ID: taskId, DISPATCHER_URL: fake.url, AGENT_KEY: 'test-key', SLEEP_SECONDS: '300' },
      resources: { cpu: '250m', memory: '32Mi' },
    };
  };
  const exitsOf = (reports: Array<[string, AgentState]>, taskId: string) => reports.filter(([id, state]) => id === taskId && state.phase === 'exited').map(([, state]) => state);

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    enginePath = engine.dockerHost.replace(/^unix:\/\//, '');
    relay = await engineRelay(enginePath);
    fake = await agentProtocolServer();
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((runtime) => runtime.close()));
    await relay?.close();
    fake?.server.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  it('reports each exit with its code, holding one request to the engine for all its agents', async () => {
    const { runtime, reports } = runtimeWithReports();
    const specs = Array.from({ length: 5 }, sleeper);
    const refs = await Promise.all(specs.map((spec) => runtime.submit(spec)));
    await until(() => Promise.all(refs.map((ref, i) => runtime.logs(specs[i].taskId, ref))), (logs) => logs.every((text) => text.includes('sleeping 300 s')));
    // Five agents running: the events stream is the one connection left open (a wait per agent was five).
    expect(await until(() => relay.open(), (open) => open <= 1, 10_000)).toBe(1);

    await docker.getContainer(refs[0]).kill({ signal: 'SIGKILL' });
    await docker.getContainer(refs[1]).kill({ signal: 'SIGTERM' });
    await until(() => exitsOf(reports, specs[1].taskId), (exits) => exits.length > 0);
    await until(() => exitsOf(reports, specs[0].taskId), (exits) => exits.length > 0);
    expect(exitsOf(reports, specs[0].taskId)).toEqual([{ phase: 'exited', exitCode: 137 }]);
    expect(exitsOf(reports, specs[1].taskId)).toEqual([{ phase: 'exited', exitCode: 143 }]);
    // The others still run, and nothing was said of them but their start.
    for (const spec of specs.slice(2)) expect(reports.filter(([id]) => id === spec.taskId)).toEqual([[spec.taskId, { phase: 'running' }]]);
    await Promise.all(specs.map((spec, i) => runtime.stop(spec.taskId, refs[i])));
  });

  it('reports, once, an exit that happened while the engine could not be reached', async () => {
    const { runtime, reports } = runtimeWithReports();
    const spec = sleeper();
    const ref = await runtime.submit(spec);
    await until(() => runtime.logs(spec.taskId, ref), (text) => text.includes('sleeping 300 s'));

    relay.cut();
    await docker.getContainer(ref).kill({ signal: 'SIGKILL' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(exitsOf(reports, spec.taskId)).toEqual([]);
    relay.restore();

    expect(await until(() => exitsOf(reports, spec.taskId), (exits) => exits.length > 0)).toEqual([{ phase: 'exited', exitCode: 137 }]);
    // The stream opened again from the last event's time: a second cut and return says nothing new of it.
    relay.cut();
    relay.restore();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(exitsOf(reports, spec.taskId)).toHaveLength(1);
  });

  it('reports the exits of the agents a restarted dispatcher takes up', async () => {
    const first = runtimeWithReports();
    const spec = sleeper();
    const ref = await first.runtime.submit(spec);
    await until(() => first.runtime.logs(spec.taskId, ref), (text) => text.includes('sleeping 300 s'));
    await first.runtime.close();

    const second = runtimeWithReports();
    expect(await second.runtime.listManaged()).toContainEqual({ taskId: spec.taskId, ref, state: { phase: 'running' } });
    await docker.getContainer(ref).kill({ signal: 'SIGKILL' });
    expect(await until(() => exitsOf(second.reports, spec.taskId), (exits) => exits.length > 0)).toEqual([{ phase: 'exited', exitCode: 137 }]);
    expect(exitsOf(first.reports, spec.taskId)).toEqual([]);
  });
});
