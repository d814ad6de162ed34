import { DISRUPTED_PODS_ANNOTATION, jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
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

  const evictRunningPod = async (taskId: string) => {
    await waitFor(() => podsOf(taskId).length === 1, 3000, 'the pod');
    const before = podsOf(taskId).map((p) => p.metadata.name);
    server.jobs.run('default', jobName(taskId));
    await under.waitForPhase(taskId, 'running');
    server.jobs.evict('default', jobName(taskId));
    await waitFor(() => podsOf(taskId).every((p) => !before.includes(p.metadata.name)), 3000, 'the evicted pod gone');
  };

  it('fails the task once its pods were disrupted more often than AGENT_MAX_EVICTION_REPLACEMENTS allows, and stops the replacement', async () => {
    await under.backend.close();
    under = startBackend(server, { maxEvictionReplacements: 1 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    await evictRunningPod(spec.taskId);
    await under.waitForPhase(spec.taskId, 'starting');

    await evictRunningPod(spec.taskId);
    const end = await under.waitForPhase(spec.taskId, 'exited');
    expect(end).toEqual({
      phase: 'exited', exitCode: -1, reason: 'EvictionLimit',
      message: "the agent's pod was evicted or disrupted 2 times; AGENT_MAX_EVICTION_REPLACEMENTS (1) allows no more replacements",
    });
    // The Job's replacement pod is ended under its policy (the Job suspended), then the Job goes.
    await waitFor(() => (server.store.get('jobs', 'default', jobName(spec.taskId))?.spec as any)?.suspend === true, 3000, 'the Job suspended');
    await waitFor(() => podsOf(spec.taskId).length === 0, 5000, 'no pod left');
    await under.backend.stop(spec.taskId, `default/${jobName(spec.taskId)}`);
    await under.backend.remove(spec.taskId, `default/${jobName(spec.taskId)}`);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))).toBeUndefined();
  });

  it('counts the disruptions recorded on the Job after a restart of the dispatcher', async () => {
    await under.backend.close();
    under = startBackend(server, { maxEvictionReplacements: 1 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    await evictRunningPod(spec.taskId);
    const recorded = () => (server.store.get('jobs', 'default', jobName(spec.taskId))!.metadata.annotations ?? {})[DISRUPTED_PODS_ANNOTATION];
    await waitFor(() => Boolean(recorded()), 3000, 'the disruption recorded on the Job');
    expect(recorded()!.split(',')).toHaveLength(1);

    await under.backend.close();
    under = startBackend(server, { maxEvictionReplacements: 1 });
    await under.backend.listManaged();
    await evictRunningPod(spec.taskId);
    expect(await under.waitForPhase(spec.taskId, 'exited')).toMatchObject({ reason: 'EvictionLimit', message: expect.stringContaining('AGENT_MAX_EVICTION_REPLACEMENTS (1)') });
  });
});
