import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { DockerRuntime } from '../../src/dispatcher/runtime/docker-runtime';
import { AgentSpec, AgentState } from '../../src/dispatcher/runtime/runtime';
import { RuntimeRegistry } from '../../src/dispatcher/runtime/runtime-registry';
import { AppConfig } from '../../src/shared/config/config';
import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { readUntil as until } from '../harness/wait';
import { agentProtocolServer, removeManagedContainers, requireContainerEngine, SHELL_AGENT_IMAGE } from '../harness/podman';

describe('docker engine backend against Podman', () => {
  const dispatcherName = `atc-test-${randomUUID().slice(0, 8)}`;
  let docker: Docker;
  let dockerHost: string;
  let runtime: DockerRuntime;
  let fake: Awaited<ReturnType<typeof agentProtocolServer>>;

  const makeSpec = (overrides: Partial<AgentSpec> = {}, env: Record<string, string> = {}): AgentSpec => {
    const taskId = randomUUID();
    return {
      taskId,
      image: SHELL_AGENT_IMAGE,
      namespace: '',
      env: { TASK_ID: taskId, DISPATCHER_URL: fake.url, AGENT_KEY: 'test-key', ...env },
      resources: { cpu: '500m', memory: '64Mi' },
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      timeoutSeconds: 60,
      isolation: DEFAULT_AGENT_ISOLATION,
      ...overrides,
    };
  };

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    ({ docker, dockerHost } = engine);
    runtime = new DockerRuntime({ dockerHost, dispatcherName, network: 'host', stopGraceSeconds: 2 });
    fake = await agentProtocolServer();
  });
  afterAll(async () => {
    await runtime?.close();
    fake?.server.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  it('runs the agent with its labels, env and limits, and reports its exit and output', async () => {
    const spec = makeSpec({}, { ECHO_MESSAGE: 'from-env' });
    const ref = await runtime.submit(spec);
    const info = await docker.getContainer(ref).inspect();
    expect(info.Config.Labels).toMatchObject({ 'app.kubernetes.io/managed-by': dispatcherName, 'task-id': spec.taskId });
    expect(info.HostConfig).toMatchObject({ NanoCpus: 500_000_000, Memory: 64 * 1024 * 1024, NetworkMode: 'host' });

    const state = await until(() => runtime.status(spec.taskId, ref), (s) => s.phase === 'exited');
    expect(state).toEqual({ phase: 'exited', exitCode: 0 });
    expect(fake.calls).toContain(`PUT /agent/objects/results/${spec.taskId}/result.json`);
    const logs = await runtime.logs(spec.taskId, ref);
    expect(logs).toContain(`shell-echo agent for task ${spec.taskId}`);
    expect(await runtime.logs(spec.taskId, ref, 1)).toBe('shell-echo agent done\n');
  });

  it('stops a running agent with SIGTERM and keeps its output after removal', async () => {
    const spec = makeSpec({}, { SLEEP_SECONDS: '300' });
    const ref = await runtime.submit(spec);
    await until(() => runtime.logs(spec.taskId, ref), (logs) => logs.includes('sleeping 300 s'), 10_000);
    expect((await runtime.status(spec.taskId, ref)).phase).toBe('running');
    const listed = await runtime.listManaged();
    expect(listed).toContainEqual({ taskId: spec.taskId, ref, state: { phase: 'running' } });

    await runtime.stop(spec.taskId, ref);
    expect(await runtime.status(spec.taskId, ref)).toEqual({ phase: 'exited', exitCode: 143 });
    await runtime.remove(spec.taskId, ref);
    await expect(docker.getContainer(ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await runtime.logs(spec.taskId, ref)).toContain('SIGTERM received');
    expect((await runtime.listManaged()).map((agent) => agent.taskId)).not.toContain(spec.taskId);
  });

  it('keeps the output of an agent that two parts of the dispatcher stop and remove at once', async () => {
    for (let round = 0; round < 5; round++) {
      const spec = makeSpec({}, { SLEEP_SECONDS: '300' });
      const ref = await runtime.submit(spec);
      await until(() => runtime.logs(spec.taskId, ref), (logs) => logs.includes('sleeping 300 s'), 10_000);
      // A cancel, the exit watcher and a sweep all end the task's agent through the registry.
      const registry = new RuntimeRegistry([runtime], { dispatcherInstance: 'this-replica' } as AppConfig);
      const agent = { taskId: spec.taskId, runtimeBackend: 'local', runtimeRef: ref };
      await Promise.all([registry.stopAndRemove(agent), registry.stopAndRemove(agent), registry.stopAndRemove(agent)]);
      await expect(docker.getContainer(ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
      const logs = await runtime.logs(spec.taskId, ref);
      expect(logs).toContain(`shell-echo agent for task ${spec.taskId}`);
      expect(logs).toContain('SIGTERM received');
    }
  });

  it('ends an agent with SIGTERM even when the stop comes while its check-in is on its way', async () => {
    // A dispatcher that holds the check-in answer until told: the task is about to show as
    // running, and a cancel may come before the agent has the answer.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let checkinArrived!: () => void;
    const arrived = new Promise<void>((resolve) => (checkinArrived = resolve));
    const holding = createServer((request, response) => {
      request.resume().on('end', () => {
        if (request.url === '/agent/checkin') checkinArrived();
        void released.then(() => {
          response.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
          response.end(JSON.stringify({ ok: true, data: { brief_key: null, env: {} } }));
        });
      });
    });
    await new Promise<void>((resolve) => holding.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(holding.address() as AddressInfo).port}`;
      const spec = makeSpec({}, { SLEEP_SECONDS: '300', DISPATCHER_URL: url });
      const ref = await runtime.submit(spec);
      await arrived;
      const stopped = runtime.stop(spec.taskId, ref);
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      await stopped;
      // 143: the agent's own SIGTERM handler ended it; 137 would be the SIGKILL after the grace.
      expect(await runtime.status(spec.taskId, ref)).toEqual({ phase: 'exited', exitCode: 143 });
      expect(await runtime.logs(spec.taskId, ref)).toContain('SIGTERM received');
      await runtime.remove(spec.taskId, ref);
    } finally {
      release();
      holding.close();
    }
  });

  it('reports a missing image as failed to start with the engine reason', async () => {
    const spec = makeSpec({ image: 'localhost/agent-examples/does-not-exist:latest' });
    const pushed: AgentState[] = [];
    runtime.onStateChange((taskId, state) => taskId === spec.taskId && pushed.push(state));
    const ref = await runtime.submit(spec);
    const state = await until(() => runtime.status(spec.taskId, ref), (s) => s.phase !== 'starting');
    expect(state).toMatchObject({ phase: 'failed_to_start', reason: 'ImagePullFailed' });
    expect((state as { message: string }).message).toContain('localhost/agent-examples/does-not-exist:latest');
    expect(pushed).toContainEqual(state);
  });

  it('never reports a pulling agent as gone, however its status calls overlap the failing pull', async () => {
    const spec = makeSpec({ image: `localhost/agent-examples/pull-race-${randomUUID().slice(0, 8)}:latest` });
    const ref = await runtime.submit(spec);
    const seen: AgentState[] = [];
    let final: AgentState | undefined;
    // Several status calls always in flight: some are on their way when the pull ends.
    const poller = async () => {
      while (!final) {
        const state = await runtime.status(spec.taskId, ref);
        seen.push(state);
        if (state.phase !== 'starting') final = state;
      }
    };
    // The deadline's timer is unref'd: once the pollers are done it must not hold Jest for its 30 s.
    await Promise.race([Promise.all([poller(), poller(), poller(), poller()]), new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
    expect(final).toMatchObject({ phase: 'failed_to_start', reason: 'ImagePullFailed' });
    expect(seen.filter((state) => state.phase !== 'starting' && state.phase !== 'failed_to_start')).toEqual([]);
    // A pull in progress is not a stuck start: no reason that the start grace would count.
    expect(seen.filter((state) => state.phase === 'starting')).toContainEqual({ phase: 'starting', message: 'The image is being pulled.' });
  });

  it('exposes the task ports on a network other than the host one (DOCKER_NETWORK)', async () => {
    const bridged = new DockerRuntime({ dockerHost, dispatcherName, network: 'bridge' });
    const spec = makeSpec({ ports: [{ containerPort: 8080, protocol: 'TCP' }, { containerPort: 5353, protocol: 'UDP' }] });
    try {
      const ref = await bridged.submit(spec);
      const info = await docker.getContainer(ref).inspect();
      expect(info.HostConfig.NetworkMode).toBe('bridge');
      expect(Object.keys(info.Config.ExposedPorts ?? {}).sort()).toEqual(['5353/udp', '8080/tcp']);
      await bridged.remove(spec.taskId, ref);
    } finally {
      await bridged.close();
    }
  });

  it('answers ping, and a container it does not know is gone', async () => {
    await expect(runtime.ping()).resolves.toBeUndefined();
    expect(await runtime.status(randomUUID(), 'no-such-container')).toMatchObject({ phase: 'gone' });
  });
});
