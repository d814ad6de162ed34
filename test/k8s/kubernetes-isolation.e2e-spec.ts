import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { networkPolicyName } from '../../src/dispatcher/runtime/kubernetes-network-policy';
import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';

/** Hardened pods, runtime classes and egress policies (CONTRACT section 4) against the Kubernetes API test server. */
describe('agent isolation on the Kubernetes backend', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default'] });
    under = startBackend(server, { dispatcher: { podLabels: { 'app.kubernetes.io/component': 'dispatcher' }, namespace: 'platform', port: 8080, url: 'http://dispatcher.platform:8080' } });
  });
  afterEach(async () => {
    await under.backend.close();
    await server.close();
  });

  it('runs the agent in a hardened pod behind a NetworkPolicy created owned by its suspended Job, before the Job is resumed', async () => {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    const job = server.store.get('jobs', 'default', jobName(spec.taskId))!;
    await waitFor(() => server.store.list('pods').length > 0, 3000, 'the Job controller to create the pod');
    const pod = server.store.list('pods')[0];
    expect((pod.spec as any).securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect((pod.spec as any).containers[0].securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true });
    expect((pod.spec as any).automountServiceAccountToken).toBe(false);

    const policy = server.store.get('networkpolicies', 'default', networkPolicyName(spec.taskId))!;
    expect(policy.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: job.metadata.uid })]);
    expect((policy.spec as any).podSelector).toEqual({ matchLabels: { 'task-id': spec.taskId } });
    expect(pod.metadata.labels).toMatchObject({ 'task-id': spec.taskId });
    const creates = server.requests.filter((r) => r.method === 'POST').map((r) => r.path);
    expect(creates).toEqual(['/apis/networking.k8s.io/v1/namespaces/default/networkpolicies', '/apis/batch/v1/namespaces/default/jobs', '/api/v1/namespaces/default/secrets', '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies']);

    // Stopping ends the pod under its policy; removing deletes the Job, and the policy goes with it, as its Secret does.
    await under.backend.stop(spec.taskId, ref);
    await under.backend.remove(spec.taskId, ref);
    await waitFor(() => !server.store.get('networkpolicies', 'default', networkPolicyName(spec.taskId)) && !server.store.get('secrets', 'default', secretName(spec.taskId)), 3000, 'the dependents to be collected');
  });

  it('fails a task naming a runtime class the cluster lacks, within the start grace, with the reason', async () => {
    const spec = makeSpec({ isolation: { ...DEFAULT_AGENT_ISOLATION, runtimeClass: 'gvisor' } });
    const submittedAt = Date.now();
    await under.backend.submit(spec);
    const state = await under.waitForPhase(spec.taskId, 'failed_to_start', 6000);
    expect(state).toEqual({ phase: 'failed_to_start', reason: 'FailedCreate', message: expect.stringMatching(/is forbidden: pod rejected: RuntimeClass "gvisor" not found$/) });
    // startGraceSeconds is 1 here: failed after the grace, and soon after it.
    expect(Date.now() - submittedAt).toBeGreaterThanOrEqual(1000);
    expect(Date.now() - submittedAt).toBeLessThan(5000);
    expect(server.store.list('pods')).toEqual([]);
    await waitFor(() => server.store.list('jobs').length === 0 && !server.store.get('networkpolicies', 'default', networkPolicyName(spec.taskId)), 3000, 'the Job and its policy to be deleted');
  });

  it('runs a pod with the runtime class the cluster has', async () => {
    const created = await fetch(`${server.url}/apis/node.k8s.io/v1/runtimeclasses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'gvisor' }, handler: 'runsc' }),
    });
    expect(created.status).toBe(201);
    const spec = makeSpec({ isolation: { ...DEFAULT_AGENT_ISOLATION, runtimeClass: 'gvisor' } });
    await under.backend.submit(spec);
    await waitFor(() => server.store.list('pods').length > 0, 3000, 'the Job controller to create the pod');
    const pod = server.store.list('pods')[0];
    expect((pod.spec as any).runtimeClassName).toBe('gvisor');
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
  });

  it("models the API server's NetworkPolicy validation: an except outside its cidr is 422", async () => {
    const bad = await fetch(`${server.url}/apis/networking.k8s.io/v1/namespaces/default/networkpolicies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'bad' },
        spec: { podSelector: {}, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['fc00::/7'] } }] }] },
      }),
    });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { message: string }).message).toContain('must be a strict subset of `cidr`');
  });
});
