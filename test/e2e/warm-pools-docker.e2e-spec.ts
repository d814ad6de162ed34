import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import { makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { removeManagedContainers, requireContainerEngine, WARM_AGENT_IMAGE } from '../harness/podman';
import { startTestSystem, TestSystem } from '../harness/system';
import { makePool, poolAgents, waitForIdle } from '../harness/warm-pools';

jest.setTimeout(120_000);

describe('warm pools on the docker engine (Podman)', () => {
  const dispatcherName = `atc-warm-${randomUUID().slice(0, 8)}`;
  let docker: Docker;
  let system: TestSystem;

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    await docker.getImage(WARM_AGENT_IMAGE).inspect().catch(() => {
      throw new Error(`The container engine lacks ${WARM_AGENT_IMAGE}: run scripts/setup-podman.sh`);
    });
    system = await startTestSystem({
      role: 'dispatcher',
      env: {
        LOCAL_ENGINE: 'docker', DOCKER_HOST: engine.dockerHost, DISPATCHER_NAME: dispatcherName,
        WARM_POOLS: JSON.stringify([makePool({ name: 'shell', image: WARM_AGENT_IMAGE, size: 2, resources: { cpu: '500m', memory: '64Mi' } })]),
      },
    });
    await waitForIdle(system, 'shell', 2, 60_000);
  });
  afterAll(async () => {
    await system?.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  const containersOf = async (agentId: string) =>
    docker.listContainers({ all: true, filters: { label: [`app.kubernetes.io/managed-by=${dispatcherName}`, `task-id=${agentId}`] } });

  it('runs a fitting task in an idle container, which is removed after it and replaced', async () => {
    const request = makeTaskRequest({ agent_image: WARM_AGENT_IMAGE, brief_key: '', resources: { cpu: '250m', memory: '64Mi' }, ports: [] });
    expect((await taskApi(system).create(request)).status).toBe(201);
    const done = await waitForStatus(system, request.task_id, ['completed', 'failed'], 30_000);
    expect(done).toMatchObject({ status: 'completed', warm: true, pool: 'shell', result_metadata: { agent: 'shell-warm' } });
    const agent = (await poolAgents(system)).find((row) => row.task_id === request.task_id)!;
    expect(done.runtime.ref).toBe(agent.runtime_ref);
    await waitFor(async () => (await containersOf(agent.agent_id)).length === 0, 40_000, 'the used container to be removed');
    await waitForIdle(system, 'shell', 2, 60_000);
    expect((await poolAgents(system)).find((row) => row.agent_id === agent.agent_id)?.state).toBe('gone');
  });

  it('replaces an idle container that is removed under it, as soon as the engine reports it', async () => {
    const [victim] = (await poolAgents(system)).filter((row) => row.state === 'idle');
    await docker.getContainer(victim.runtime_ref!).remove({ force: true });
    // Well within the 30 s between the dispatcher's own looks at idle containers: the engine's event did it.
    await waitFor(async () => (await poolAgents(system)).find((row) => row.agent_id === victim.agent_id)?.state === 'gone', 5_000, 'the lost container to be retired');
    await waitForIdle(system, 'shell', 2, 60_000);
  });
});
