import type { V1NetworkPolicy } from '@kubernetes/client-node';
import { AgentIsolation, DEFAULT_AGENT_ISOLATION } from '../../shared/task-protocol/isolation';
import { buildJob, jobProblems } from './kubernetes-manifests';
import { buildDefaultDenyPolicy, buildNetworkPolicy, DispatcherEndpoint, KUBE_DNS, networkPolicyProblems, PRIVATE_IPV4, PRIVATE_IPV6 } from './kubernetes-network-policy';
import { AgentSpec } from './runtime';

const TASK_ID = '5b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c4d';
const settings = { namespace: 'agents', dispatcherName: 'eu', ttlSecondsAfterFinished: 600 };
const dispatcher: DispatcherEndpoint = { podLabels: { 'app.kubernetes.io/component': 'dispatcher' }, namespace: 'platform', port: 8080, url: 'http://dispatcher.platform:8080' };
const owner = { apiVersion: 'batch/v1', kind: 'Job', name: `agent-${TASK_ID}`, uid: 'b5a1c1e2-0000-4000-8000-000000000001', controller: true, blockOwnerDeletion: false };

function makeSpec(isolation: Partial<AgentIsolation> = {}): AgentSpec {
  return {
    taskId: TASK_ID, image: 'registry.example/agent:1', namespace: '', env: { TASK_ID, AGENT_KEY: 'k' },
    resources: { cpu: '500m', memory: '512Mi' }, ports: [], timeoutSeconds: 600,
    isolation: { ...DEFAULT_AGENT_ISOLATION, ...isolation },
  };
}

const policyOf = (network: AgentIsolation['network'], endpoint = dispatcher, more: { dns?: typeof KUBE_DNS; denyCidrs?: string[] } = {}): V1NetworkPolicy =>
  buildNetworkPolicy(makeSpec({ network }), settings, { dispatcher: endpoint, dns: more.dns ?? KUBE_DNS, denyCidrs: more.denyCidrs ?? [] }, owner);

describe('hardened agent pods', () => {
  it('run as non-root, read-only, no escalation, no capabilities, RuntimeDefault seccomp, with writable /tmp and /workspace', () => {
    const pod = buildJob(makeSpec(), settings).spec!.template.spec!;
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0].securityContext).toEqual({ allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true });
    expect(pod.containers[0].volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }, { name: 'workspace', mountPath: '/workspace' }]);
    expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: {} }, { name: 'workspace', emptyDir: {} }]);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.runtimeClassName).toBeUndefined();
  });

  it('limits ephemeral storage: a sizeLimit on every emptyDir, a request and limit on the agent container', () => {
    const pod = buildJob(makeSpec(), { ...settings, storage: { ephemeral: '2Gi', emptyDirSizeLimit: '1Gi' } }).spec!.template.spec!;
    expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '1Gi' } }, { name: 'workspace', emptyDir: { sizeLimit: '1Gi' } }]);
    expect(pod.containers[0].resources).toEqual({
      requests: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '2Gi' },
      limits: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '2Gi' },
    });
  });

  it('relaxes only the documented fields, and names the runtime class', () => {
    const job = buildJob(makeSpec({ runtimeClass: 'gvisor', security: { runAsNonRoot: false, runAsUser: null, readOnlyRootFilesystem: false } }), settings);
    const pod = job.spec!.template.spec!;
    expect(pod.runtimeClassName).toBe('gvisor');
    expect(pod.securityContext).toEqual({ runAsNonRoot: false, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0].securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: false });
    expect(jobProblems(job)).toEqual([]);
  });
});

describe('the agent NetworkPolicy', () => {
  const dns = { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }] };
  const toDispatcher = {
    to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'platform' } }, podSelector: { matchLabels: { 'app.kubernetes.io/component': 'dispatcher' } } }],
    ports: [{ protocol: 'TCP', port: 8080 }],
  };

  it('selects only the task pod, is owned by its Job, and allows DNS and the dispatcher by default', () => {
    const policy = policyOf(DEFAULT_AGENT_ISOLATION.network);
    expect(policy.metadata).toMatchObject({ name: `agent-${TASK_ID}-egress`, namespace: 'agents', ownerReferences: [{ kind: 'Job', name: owner.name, uid: owner.uid, controller: true }] });
    expect(policy.spec).toEqual({ podSelector: { matchLabels: { 'task-id': TASK_ID } }, policyTypes: ['Egress'], egress: [dns, toDispatcher] });
    expect(networkPolicyProblems(policy)).toEqual([]);
  });

  it('allows nothing for egress none, and what allow names in every mode', () => {
    expect(policyOf({ egress: 'none', allow: [] }).spec!.egress).toEqual([]);
    const allowed = policyOf({ egress: 'none', allow: [{ cidr: '10.20.0.0/16', ports: [5432] }, { cidr: '2001:db8::/32', ports: [] }] });
    expect(allowed.spec!.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.20.0.0/16' } }], ports: [{ protocol: 'TCP', port: 5432 }] },
      { to: [{ ipBlock: { cidr: '2001:db8::/32' } }] },
    ]);
  });

  it('opens the public internet but never private, link-local or metadata ranges for egress open', () => {
    const egress = policyOf({ egress: 'open', allow: [] }).spec!.egress!;
    expect(egress.slice(0, 2)).toEqual([dns, toDispatcher]);
    expect(egress[2]).toEqual({ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_IPV4 } }, { ipBlock: { cidr: '::/0', except: PRIVATE_IPV6 } }] });
    expect(PRIVATE_IPV4).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']));
    expect(PRIVATE_IPV6).toEqual(expect.arrayContaining(['fc00::/7', 'fe80::/10']));
    expect(PRIVATE_IPV4).toEqual(expect.arrayContaining(['198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4']));
    expect(PRIVATE_IPV6).toEqual(expect.arrayContaining(['ff00::/8', 'fec0::/10']));
  });

  it('adds AGENT_EGRESS_DENY_CIDRS to the built-in ranges, each in its family', () => {
    const egress = policyOf({ egress: 'open', allow: [] }, dispatcher, { denyCidrs: ['203.0.113.0/24', '2001:db8:1::/48'] }).spec!.egress!;
    expect(egress[2].to).toEqual([
      { ipBlock: { cidr: '0.0.0.0/0', except: [...PRIVATE_IPV4, '203.0.113.0/24'] } },
      { ipBlock: { cidr: '::/0', except: [...PRIVATE_IPV6, '2001:db8:1::/48'] } },
    ]);
    expect(networkPolicyProblems(policyOf({ egress: 'open', allow: [] }, dispatcher, { denyCidrs: ['203.0.113.0/24'] }))).toEqual([]);
  });

  it('lets the cluster DNS be named: NodeLocal DNSCache by address, OpenShift by its namespace and port', () => {
    const nodeLocal = policyOf({ egress: 'dispatcher', allow: [] }, dispatcher, { dns: { peers: [{ ipBlock: { cidr: '169.254.20.10/32' } }, ...KUBE_DNS.peers], ports: [53] } });
    expect(nodeLocal.spec!.egress![0].to).toEqual([{ ipBlock: { cidr: '169.254.20.10/32' } }, ...KUBE_DNS.peers]);
    const openshift = policyOf({ egress: 'dispatcher', allow: [] }, dispatcher, { dns: { peers: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-dns' } } }], ports: [5353] } });
    expect(openshift.spec!.egress![0].ports).toEqual([{ protocol: 'UDP', port: 5353 }, { protocol: 'TCP', port: 5353 }]);
  });

  it('gives every agent namespace a default-deny baseline for the pods the dispatcher manages', () => {
    const policy = buildDefaultDenyPolicy(settings, 'agents');
    expect(policy.metadata).toMatchObject({ name: 'eu-agents-default-deny', namespace: 'agents' });
    expect(policy.spec).toEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'eu' } }, policyTypes: ['Ingress', 'Egress'] });
    expect(networkPolicyProblems(policy)).toEqual([]);
  });

  it('reaches a dispatcher known only by an IP address through an ipBlock on its port', () => {
    const egress = policyOf(DEFAULT_AGENT_ISOLATION.network, { podLabels: {}, namespace: 'agents', port: 8080, url: 'http://10.0.0.7:9000' }).spec!.egress!;
    expect(egress).toEqual([dns, { to: [{ ipBlock: { cidr: '10.0.0.7/32' } }], ports: [{ protocol: 'TCP', port: 9000 }] }]);
  });

  it('reports fields the schema does not know', () => {
    const policy = policyOf(DEFAULT_AGENT_ISOLATION.network);
    expect(networkPolicyProblems({ ...policy, spec: { ...policy.spec!, egres: [] } as never })).toEqual(['unknown field "spec.egres"']);
  });
});
