import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { networkPolicyName } from '../../src/dispatcher/runtime/kubernetes-network-policy';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';
import { EgressWindows } from './kube-network-policies';

/**
 * No egress window (issue 22, item 1): from the moment a task is cancelled or times out until
 * its pod is gone, some NetworkPolicy isolates the pod's egress. The test server deletes pods
 * gracefully (the agent may trap SIGTERM and run out its grace) and collects a deleted Job's
 * dependents in the garbage collector's order: the policy at once, the pod after its grace.
 */
describe('egress of an agent that is being stopped', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;
  let windows: EgressWindows;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default'] });
    server.jobs.terminationGraceMs = 400;
    windows = new EgressWindows(server.store);
    under = startBackend(server, { policyReconcileMs: 100 });
  });
  afterEach(async () => {
    windows.stop();
    await under.backend.close();
    await server.close();
  });

  async function runningAgent() {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    await waitFor(() => server.jobs.pod('default', jobName(spec.taskId)) !== undefined, 3000, 'the Job controller to create the pod');
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    return { spec, ref };
  }

  it('keeps the pod isolated from a cancel until the pod is gone, and deletes the Job only then', async () => {
    const { spec, ref } = await runningAgent();
    await under.backend.stop(spec.taskId, ref);
    await under.backend.remove(spec.taskId, ref);
    await waitFor(() => server.store.list('pods').length === 0 && server.store.list('jobs').length === 0, 5000, 'the pod and the Job to be gone');
    expect(windows.seen).toEqual([]);
    // The pod ended while its Job (and so its policy) still existed.
    const podGone = server.store.since('pods', 0, {}).findLast((e) => e.type === 'DELETED')!.resourceVersion;
    const jobGone = server.store.since('jobs', 0, {}).findLast((e) => e.type === 'DELETED')!.resourceVersion;
    expect(podGone).toBeLessThan(jobGone);
  });

  it('keeps the pod isolated when its time-out stops it while it traps SIGTERM for its whole grace', async () => {
    server.jobs.terminationGraceMs = 1000;
    const { spec, ref } = await runningAgent();
    const stopping = under.backend.stop(spec.taskId, ref);
    await waitFor(() => server.store.list('pods').some((pod) => pod.metadata.deletionTimestamp), 3000, 'the pod to be Terminating');
    expect(server.store.get('networkpolicies', 'default', networkPolicyName(spec.taskId))).toBeDefined();
    await stopping;
    await under.backend.remove(spec.taskId, ref);
    await waitFor(() => server.store.list('pods').length === 0 && server.store.list('jobs').length === 0, 5000, 'the pod and the Job to be gone');
    expect(windows.seen).toEqual([]);
  });

  it('keeps a default-deny policy for agent pods in every namespace it uses, and puts it back when deleted', async () => {
    await under.backend.synced('default');
    await waitFor(() => server.store.list('networkpolicies').length === 1, 3000, 'the default-deny policy');
    const [baseline] = server.store.list('networkpolicies');
    expect(baseline.spec).toEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'test-dispatcher' } }, policyTypes: ['Ingress', 'Egress'] });
    server.store.remove('networkpolicies', 'default', baseline.metadata.name);
    await waitFor(() => server.store.list('networkpolicies').length === 1, 3000, 'the default-deny policy to be put back');
  });

  it("puts back a running agent's deleted policy, owned by its Job, without touching one that is there", async () => {
    const { spec } = await runningAgent();
    const name = networkPolicyName(spec.taskId);
    const before = server.store.get('networkpolicies', 'default', name)!;
    server.store.remove('networkpolicies', 'default', name);
    await waitFor(() => server.store.get('networkpolicies', 'default', name) !== undefined, 3000, 'the policy to be put back');
    const job = server.store.get('jobs', 'default', jobName(spec.taskId))!;
    const after = server.store.get('networkpolicies', 'default', name)!;
    expect(after.spec).toEqual(before.spec);
    expect(after.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: job.metadata.uid })]);
    const rv = after.metadata.resourceVersion;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(server.store.get('networkpolicies', 'default', name)!.metadata.resourceVersion).toBe(rv);
  });
});
