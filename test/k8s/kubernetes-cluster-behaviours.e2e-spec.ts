import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { KubeApiServer, KubeApiServerOptions } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';

/** What a real cluster does that a kind test server would not, met by the backend. */
describe('Kubernetes backend against a cluster-like API server', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  async function start(options: Partial<KubeApiServerOptions> = {}, backend: Parameters<typeof startBackend>[1] = {}): Promise<void> {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default', 'team-a', 'locked'], ...options });
    under = startBackend(server, { allowedNamespaces: ['default', 'team-a', 'locked'], ...backend });
  }
  afterEach(async () => {
    await under?.backend.close();
    await server?.close();
  });

  it('sees the Job before its pod, which the Job controller creates later, and waits without failing', async () => {
    await start();
    const spec = makeSpec();
    await under.backend.submit(spec);
    await waitFor(() => server.store.list('pods').length === 1, 3000, 'the Job controller to create the pod');
    const created = (kind: 'jobs' | 'pods') => Date.parse(server.store.list(kind)[0].metadata.creationTimestamp);
    expect(created('pods') - created('jobs')).toBeGreaterThanOrEqual(40);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    expect(under.states.get(spec.taskId)!.map((s) => s.phase)).toEqual(['starting', 'running']);
  });

  it('refuses a submission where RBAC grants nothing, with the API server sentence, and leaves nothing behind', async () => {
    await start();
    server.forbidNamespace('locked');
    await expect(under.backend.submit(makeSpec({ namespace: 'locked' }))).rejects.toThrow(
      'networkpolicies.networking.k8s.io is forbidden: User "system:serviceaccount:agent-tasks:dispatcher" cannot create resource "networkpolicies" in API group "networking.k8s.io" in the namespace "locked"',
    );
    expect(server.store.list('jobs')).toEqual([]);
  });

  it('runs a hardened agent pod where restricted Pod Security is enforced, and fails one relaxed to root with the admission message', async () => {
    await start();
    server.enforceRestrictedPodSecurity('team-a');
    const hardened = makeSpec({ namespace: 'team-a' });
    await under.backend.submit(hardened);
    server.jobs.run('team-a', jobName(hardened.taskId));
    await under.waitForPhase(hardened.taskId, 'running', 5000);

    const relaxed = makeSpec({ namespace: 'team-a', isolation: { ...DEFAULT_AGENT_ISOLATION, security: { ...DEFAULT_AGENT_ISOLATION.security, runAsNonRoot: false } } });
    await under.backend.submit(relaxed);
    const state = await under.waitForPhase(relaxed.taskId, 'failed_to_start', 5000);
    expect(state).toMatchObject({ reason: 'FailedCreate', message: expect.stringMatching(/is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true/) });
  });

  it('fails a pull that alternates ErrImagePull and ImagePullBackOff after one start grace, not a fresh one per flip', async () => {
    await start();
    const spec = makeSpec();
    await under.backend.submit(spec);
    const started = Date.now();
    server.jobs.failPulls('default', jobName(spec.taskId), 'registry.example/agents/echo:1: not found', 100);
    // A grace started afresh at each flip (every 100 ms) would never end; one grace is 1 s.
    const state = await under.waitForPhase(spec.taskId, 'failed_to_start', 8000);
    expect(Date.now() - started).toBeLessThan(6000);
    expect(state).toMatchObject({ reason: expect.stringMatching(/^(ErrImagePull|ImagePullBackOff)$/), message: expect.stringContaining('not found') });
    const reasons = under.states.get(spec.taskId)!.filter((s) => s.phase === 'starting').map((s) => (s as { reason?: string }).reason);
    expect(new Set(reasons)).toEqual(new Set([undefined, 'ErrImagePull', 'ImagePullBackOff']));
  });

  it('follows its agents through routine compactions and watch expiries (410 Gone)', async () => {
    await start({ compactEveryMs: 150 }, { watchTimeoutSeconds: 1 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    // Other writes in the cluster move the revision on, so a resumed watch falls behind each compaction.
    let n = 0;
    const noise = setInterval(() => server.store.create('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: `other-${n++}`, namespace: 'default' } }), 50);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    clearInterval(noise);
    expect(server.expiredWatches).toBeGreaterThan(0);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running', 5000);
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 0 });
    expect(await under.waitForPhase(spec.taskId, 'exited', 5000)).toEqual({ phase: 'exited', exitCode: 0 });
  });
});
