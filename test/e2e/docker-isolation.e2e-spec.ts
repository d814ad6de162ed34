import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { DockerRuntime } from '../../src/dispatcher/runtime/docker-runtime';
import { AgentSpec, AgentState } from '../../src/dispatcher/runtime/runtime';
import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { removeManagedContainers, requireContainerEngine, SHELL_AGENT_IMAGE, SKILLS_AGENT_IMAGE } from '../harness/podman';
import { LintVersions, runWorkflowTask, sha256, uploadLintVersions } from '../harness/skill-agents';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { skillPackage } from '../harness/zip-builder';

/** Skills and isolation with the docker engine, against Podman (CONTRACT section 4). */
describe('skills and isolation on the docker engine (Podman)', () => {
  const forgeSecret = randomBytes(16).toString('hex');
  const dispatcherName = `atc-iso-${randomBytes(4).toString('hex')}`;
  let docker: Docker;
  let system: TestSystem;
  let lint: LintVersions;

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    system = await startTestSystem({ env: { LOCAL_ENGINE: 'docker', DOCKER_HOST: engine.dockerHost, DISPATCHER_NAME: dispatcherName, FORGE_WEBHOOK_SECRET: forgeSecret } });
    lint = await uploadLintVersions(system);
  });
  afterAll(async () => {
    await system?.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  it('gives an agent container exactly lint@2, which it verifies by hash', async () => {
    const task = await runWorkflowTask(system, forgeSecret, { agent_image: SKILLS_AGENT_IMAGE, skills: [`${lint.slug}@2`] });
    expect(task.body).toMatchObject({
      status: 'completed',
      result: { result_metadata: { agent: 'shell-skills', skills: [{ slug: lint.slug, version_number: 2, content_hash: sha256(lint.v2), name: 'lint' }] } },
    });
  }, 120_000);

  it('fails the task when the package it downloads is not the pinned one', async () => {
    const storage = createObjectStorage(system.config);
    const ref = `skills/sha256/${sha256(lint.v2)}.zip`;
    const forged = skillPackage({ name: 'lint', extra: 'forged' });
    await storage.put(ref, forged, { contentType: 'application/zip' });
    try {
      const task = await runWorkflowTask(system, forgeSecret, { agent_image: SKILLS_AGENT_IMAGE, skills: [`${lint.slug}@2`] });
      expect(task.body.status).toBe('failed');
      expect(task.body.error_message).toBe(`skill ${lint.slug}@2 has SHA-256 ${sha256(forged)}, not the pinned ${sha256(lint.v2)}; refused`);
    } finally {
      await storage.put(ref, lint.v2, { contentType: 'application/zip' });
    }
  }, 120_000);
});

describe('hardened agent containers (Podman accepts them)', () => {
  const dispatcherName = `atc-hard-${randomBytes(4).toString('hex')}`;
  let docker: Docker;
  let runtime: DockerRuntime;
  let dispatcher: { server: Server; url: string; checkins: string[] };

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    runtime = new DockerRuntime({ dockerHost: engine.dockerHost, dispatcherName, network: 'host', stopGraceSeconds: 2, pidsLimit: 128 });
    dispatcher = await fakeDispatcher();
  });
  afterAll(async () => {
    await runtime?.close();
    dispatcher?.server.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  const makeSpec = (isolation = DEFAULT_AGENT_ISOLATION): AgentSpec => {
    const taskId = randomUUID();
    return {
      taskId, image: SHELL_AGENT_IMAGE, namespace: '', env: { TASK_ID: taskId, DISPATCHER_URL: dispatcher.url, AGENT_KEY: 'k' },
      resources: { cpu: '500m', memory: '64Mi' }, ports: [], timeoutSeconds: 60, isolation,
    };
  };
  const exited = (spec: AgentSpec, ref: string) => waitFor(async () => {
    const state: AgentState = await runtime.status(spec.taskId, ref);
    return state.phase === 'exited' ? state : undefined;
  }, 40_000, 'the container to exit', 250);

  it('runs the agent as a non-root user, read-only, without capabilities or new privileges, with a pids limit', async () => {
    const spec = makeSpec();
    const ref = await runtime.submit(spec);
    const info = await docker.getContainer(ref).inspect();
    expect(info.Config.User).toBe('65532:65532');
    expect(info.HostConfig).toMatchObject({ ReadonlyRootfs: true, PidsLimit: 128, NetworkMode: 'host', SecurityOpt: expect.arrayContaining(['no-new-privileges']) });
    // Podman lists the dropped capabilities by name (ALL expanded), with or without CAP_.
    const dropped = ((info.HostConfig.CapDrop ?? []) as string[]).map((cap) => cap.replace(/^CAP_/, ''));
    expect(dropped).toEqual(expect.arrayContaining(['CHOWN', 'NET_RAW', 'SETUID', 'KILL', 'DAC_OVERRIDE']));
    expect(info.HostConfig.Tmpfs).toMatchObject({ '/tmp': expect.stringContaining('mode=1777'), '/workspace': expect.any(String) });
    // The shell agent still does its work: /tmp is writable, the rest is not.
    expect(await exited(spec, ref)).toEqual({ phase: 'exited', exitCode: 0 });
    expect(dispatcher.checkins).toContain(spec.taskId);
  });

  it('gives an agent with egress none no network at all: it cannot even check in', async () => {
    const spec = makeSpec({ ...DEFAULT_AGENT_ISOLATION, network: { egress: 'none', allow: [] } });
    const ref = await runtime.submit(spec);
    expect((await docker.getContainer(ref).inspect()).HostConfig.NetworkMode).toBe('none');
    const state = await exited(spec, ref);
    expect(state).toMatchObject({ phase: 'exited' });
    expect((state as { exitCode: number }).exitCode).not.toBe(0);
    expect(dispatcher.checkins).not.toContain(spec.taskId);
  });
});

/** Answers the agent protocol (200 to everything) and records who checked in. */
async function fakeDispatcher(): Promise<{ server: Server; url: string; checkins: string[] }> {
  const checkins: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.url === '/agent/checkin') checkins.push(JSON.parse(body).task_id);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"data":{"brief_key":"","env":{},"skills":[]}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, checkins };
}
