import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { networkPolicyName, PRIVATE_IPV4 } from '../../src/dispatcher/runtime/kubernetes-network-policy';
import { makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';
import { TestSystem } from '../harness/system';
import { KubeApiServer } from '../k8s/kube-api-server';

const DISPATCHER_PODS = { 'app.kubernetes.io/name': 'agent-tasks', 'app.kubernetes.io/component': 'dispatcher' };

jest.setTimeout(60_000);

/** A task's runtime class, egress and security, from the dispatcher API to the cluster (CONTRACT section 4). */
describe('task isolation on the kubernetes backend, through the dispatcher API', () => {
  let kube: KubeApiServer;
  let system: TestSystem;
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({
      AGENT_DISPATCHER_POD_LABELS: JSON.stringify(DISPATCHER_PODS), AGENT_DISPATCHER_NAMESPACE: 'platform', AGENT_RUN_AS_USER: '1000', AGENT_ALLOW_CIDRS: '10.30.0.0/16',
      AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM: 'true',
    });
    ({ kube, system } = under);
  });
  afterAll(() => under?.close());

  const kubernetesTask = (overrides: Record<string, unknown> = {}) =>
    makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' }, ...overrides });

  it('fails a task whose runtime class the cluster lacks within the start grace, with the reason', async () => {
    const request = kubernetesTask({ runtime_class: 'gvisor' });
    const started = Date.now();
    expect((await taskApi(system).create(request)).status).toBe(201);
    const task = await waitForStatus(system, request.task_id, ['failed'], 15_000);
    expect(task.error_message).toMatch(/pod rejected: RuntimeClass "gvisor" not found/);
    expect(task.runtime_class).toBe('gvisor');
    // START_GRACE_SECONDS is 2 here; generous for a loaded machine, well under the default 120.
    expect(Date.now() - started).toBeLessThan(12_000);
  });

  it('applies the settings and the task fields to the pod and its NetworkPolicy', async () => {
    const request = kubernetesTask({
      network: { egress: 'open', allow: [{ cidr: '10.30.0.0/16', ports: [5432] }] },
      security: { read_only_root_filesystem: false },
    });
    expect((await taskApi(system).create(request)).status).toBe(201);
    const policy = await waitFor(async () => kube.store.get('networkpolicies', 'agents', networkPolicyName(request.task_id)), 10_000, 'the NetworkPolicy');
    const job = kube.store.get('jobs', 'agents', jobName(request.task_id))!;
    expect(policy.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: job.metadata.uid })]);
    const egress = (policy.spec as any).egress;
    expect(egress).toContainEqual({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'platform' } }, podSelector: { matchLabels: DISPATCHER_PODS } }],
      ports: [{ protocol: 'TCP', port: system.config.dispatcherPort }],
    });
    expect(egress).toContainEqual({ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_IPV4 } }, expect.anything()] });
    expect(egress).toContainEqual({ to: [{ ipBlock: { cidr: '10.30.0.0/16' } }], ports: [{ protocol: 'TCP', port: 5432 }] });

    const pod = (job.spec as any).template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    expect(pod.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: false, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(pod.runtimeClassName).toBeUndefined();
  });
});
