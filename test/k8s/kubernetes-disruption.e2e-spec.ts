import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';

/** A node drain or an eviction must not end a task; the agent's own failure must. */
describe('Kubernetes backend when pods are disrupted', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN });
    under = startBackend(server);
  });
  afterEach(async () => {
    await under.backend.close();
    await server.close();
  });

  const podsOf = (taskId: string) => server.store.list('pods', { labelSelector: `task-id=${taskId}` });

  it('asks autoscalers not to evict the pod', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    const pod = server.jobs.pod('default', jobName(spec.taskId))!;
    expect(pod.metadata.labels).toMatchObject({ 'task-id': spec.taskId });
    const annotations = (server.store.get('jobs', 'default', jobName(spec.taskId))!.spec as any).template.metadata.annotations;
    expect(annotations).toEqual({ 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false', 'karpenter.sh/do-not-disrupt': 'true' });
  });

  it('carries on through an eviction: the Job makes a new pod, which runs and finishes the task', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    const first = podsOf(spec.taskId)[0].metadata.name;

    server.jobs.evict('default', jobName(spec.taskId));
    await waitFor(() => podsOf(spec.taskId).some((p) => p.metadata.name !== first), 3000, 'a new pod');
    expect(under.states.get(spec.taskId)!.map((s) => s.phase)).not.toContain('exited');
    expect(under.states.get(spec.taskId)).toContainEqual({ phase: 'starting', message: 'the pod was disrupted (EvictionByEvictionAPI: Eviction API: evicting); the Job starts a new one' });

    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 0 });
    expect(await under.waitForPhase(spec.taskId, 'exited')).toEqual({ phase: 'exited', exitCode: 0 });
    expect((server.store.get('jobs', 'default', jobName(spec.taskId))!.status as any).failed ?? 0).toBe(0);
  });

  it("ends the task at the agent's own failure, whatever the backoff limit, with FailureTarget before Failed", async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 3 });
    expect(await under.waitForPhase(spec.taskId, 'exited')).toEqual({ phase: 'exited', exitCode: 3, reason: 'Error' });
    expect(podsOf(spec.taskId)).toHaveLength(1);
    await waitFor(() => (server.store.get('jobs', 'default', jobName(spec.taskId))!.status as any).conditions.some((c: any) => c.type === 'Failed'), 3000, 'Failed');
    expect((server.store.get('jobs', 'default', jobName(spec.taskId))!.status as any).conditions[1]).toMatchObject({ type: 'Failed', reason: 'PodFailurePolicy' });
  });

  it('without the disruption policy an eviction fails the Job, as it did before', async () => {
    await under.backend.close();
    under = startBackend(server, { shaping: undefined });
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.evict('default', jobName(spec.taskId));
    expect(await under.waitForPhase(spec.taskId, 'exited')).toMatchObject({ phase: 'exited', reason: 'BackoffLimitExceeded' });
    expect(podsOf(spec.taskId)).toHaveLength(0);
  });
});
