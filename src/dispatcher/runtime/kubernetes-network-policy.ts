import { isIP } from 'node:net';
import type { V1Job, V1NetworkPolicy, V1NetworkPolicyEgressRule, V1NetworkPolicyPeer, V1NetworkPolicyPort, V1OwnerReference } from '@kubernetes/client-node';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import type { AgentIsolation } from '../../shared/task-protocol/isolation';
import { describeApiError, isConflict, isNotFound, KubeApi } from './kubernetes-client';
import { checkKnownFields } from './kubernetes-manifest-fields';
import { dnsLabel, labelValue, ManifestError, managedLabels, ManifestSettings, TASK_ID_LABEL } from './kubernetes-manifests';
import { AgentSpec } from './runtime';

/** Where `dispatcher` egress lets an agent go: the dispatcher's pods (by label) or its address. */
export interface DispatcherEndpoint {
  /** Labels of the dispatcher's pods; empty: reached by `url` only when its host is an IP address. */
  podLabels: Record<string, string>;
  namespace: string;
  port: number;
  /** DISPATCHER_PUBLIC_URL. */
  url: string;
}

/**
 * Never reached by `open` egress unless a task's `allow` names them (and the operator's floor
 * lets it): private networks (where cluster pods, services and nodes live), loopback,
 * link-local (169.254.169.254, the cloud metadata service), carrier-grade NAT, benchmarking
 * (198.18.0.0/15), multicast and the reserved 240.0.0.0/4; and their IPv6 counterparts
 * (unique local, where IPv6 clusters put pods and services, link- and site-local, multicast,
 * NAT64, discard, documentation). AGENT_EGRESS_DENY_CIDRS adds to these.
 */
export const PRIVATE_IPV4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8', '0.0.0.0/8', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4'];
export const PRIVATE_IPV6 = ['fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', '::1/128', '::ffff:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001:db8::/32'];

/** Where agents resolve names: peers and ports of the cluster DNS (AGENT_DNS_PEERS, AGENT_DNS_PORTS). */
export interface DnsEndpoint {
  peers: V1NetworkPolicyPeer[];
  ports: number[];
}

/** kube-dns (CoreDNS keeps its label) in kube-system: the default of every common distribution but OpenShift. */
export const KUBE_DNS: DnsEndpoint = {
  peers: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
  ports: [53],
};

/** What the dispatcher's settings add to the egress rules it writes. */
export interface EgressSettings {
  dispatcher: DispatcherEndpoint;
  dns: DnsEndpoint;
  /** AGENT_EGRESS_DENY_CIDRS: more ranges `open` never reaches, on top of the built-in ones. */
  denyCidrs: string[];
}

export const networkPolicyName = (taskId: string): string => dnsLabel('agent', taskId, '-egress');

/**
 * The NetworkPolicy that limits one agent pod's egress (selected by its task-id label).
 * It is created owned by the task's suspended Job, before the Job is resumed, so the pod never
 * runs without it and it goes with the Job: `none` allows nothing, `dispatcher` DNS and
 * the dispatcher, `open` that plus the public internet. The task's `allow` entries are
 * added in every mode (NetworkPolicy rules add up, so they open even private ranges).
 */
export function buildNetworkPolicy(spec: AgentSpec, settings: ManifestSettings, egressSettings: EgressSettings, owner?: V1OwnerReference): V1NetworkPolicy {
  const { network } = spec.isolation;
  const egress: V1NetworkPolicyEgressRule[] = [];
  if (network.egress !== 'none') egress.push(dnsRule(egressSettings.dns), ...dispatcherRules(egressSettings.dispatcher));
  if (network.egress === 'open') egress.push(publicInternetRule(egressSettings.denyCidrs));
  egress.push(...allowRules(network.allow));
  const policy: V1NetworkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(spec.taskId),
      namespace: spec.namespace || settings.namespace,
      labels: managedLabels(settings, spec.taskId),
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      podSelector: { matchLabels: { [TASK_ID_LABEL]: managedLabels(settings, spec.taskId)[TASK_ID_LABEL] } },
      policyTypes: ['Egress'],
      egress,
    },
  };
  assertValidNetworkPolicy(policy);
  return policy;
}

/** The cluster DNS: its pods (kube-dns by label by default), on its ports, UDP and TCP. */
function dnsRule(dns: DnsEndpoint): V1NetworkPolicyEgressRule {
  return {
    to: structuredClone(dns.peers),
    ports: dns.ports.flatMap((port): V1NetworkPolicyPort[] => [{ protocol: 'UDP', port }, { protocol: 'TCP', port }]),
  };
}

function dispatcherRules(dispatcher: DispatcherEndpoint): V1NetworkPolicyEgressRule[] {
  const rules: V1NetworkPolicyEgressRule[] = [];
  if (Object.keys(dispatcher.podLabels).length > 0) {
    rules.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': dispatcher.namespace } }, podSelector: { matchLabels: dispatcher.podLabels } }],
      ports: [{ protocol: 'TCP', port: dispatcher.port }],
    });
  }
  const url = new URL(dispatcher.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    rules.push({ to: [{ ipBlock: { cidr: isIP(host) === 4 ? `${host}/32` : `${host}/128` } }], ports: [{ protocol: 'TCP', port }] });
  }
  return rules;
}

function publicInternetRule(denyCidrs: string[]): V1NetworkPolicyEgressRule {
  const extra = (family: 4 | 6) => denyCidrs.filter((cidr) => isIP(cidr.split('/')[0]) === family);
  return {
    to: [
      { ipBlock: { cidr: '0.0.0.0/0', except: [...new Set([...PRIVATE_IPV4, ...extra(4)])] } },
      { ipBlock: { cidr: '::/0', except: [...new Set([...PRIVATE_IPV6, ...extra(6)])] } },
    ],
  };
}

export const defaultDenyPolicyName = (settings: Pick<ManifestSettings, 'dispatcherName'>): string => dnsLabel(labelValue(settings.dispatcherName), 'agents', '-default-deny');

/**
 * The namespace's baseline for agent pods (every pod with the dispatcher's managed-by label):
 * no ingress, no egress. NetworkPolicies add up, so a task's own policy opens what it may
 * reach, and when that policy is gone (a Job deleted, a policy removed by hand) the pod is
 * still isolated. Owned by no Job: the dispatcher keeps it (and the chart ships it).
 */
export function buildDefaultDenyPolicy(settings: ManifestSettings, namespace: string): V1NetworkPolicy {
  const policy: V1NetworkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: defaultDenyPolicyName(settings), namespace, labels: managedLabels(settings) },
    spec: { podSelector: { matchLabels: managedLabels(settings) }, policyTypes: ['Ingress', 'Egress'] },
  };
  assertValidNetworkPolicy(policy);
  return policy;
}

function allowRules(allow: AgentIsolation['network']['allow']): V1NetworkPolicyEgressRule[] {
  return allow.map((entry) => {
    const ports: V1NetworkPolicyPort[] = entry.ports.map((port) => ({ protocol: 'TCP', port }));
    return { to: [{ ipBlock: { cidr: entry.cidr } }], ...(ports.length > 0 ? { ports } : {}) };
  });
}

export function networkPolicyProblems(policy: V1NetworkPolicy): string[] {
  const problems: string[] = [];
  try {
    new NetworkPolicy(policy as never).validate();
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error));
  }
  problems.push(...checkKnownFields('NetworkPolicy', policy));
  return problems;
}

function assertValidNetworkPolicy(policy: V1NetworkPolicy): void {
  const problems = networkPolicyProblems(policy);
  if (problems.length > 0) throw new ManifestError(problems);
}

/**
 * Creates the agent's NetworkPolicy, already owned by its (suspended) Job. One left by an
 * earlier Job of the same task (a retry after a crash) is patched to this policy and owner,
 * never deleted and created again: a pod it selects is never without it.
 */
export async function createNetworkPolicy(api: KubeApi, namespace: string, body: V1NetworkPolicy): Promise<void> {
  try {
    await api.call('create NetworkPolicy', () => api.networking.createNamespacedNetworkPolicy({ namespace, body }));
  } catch (error) {
    if (!isConflict(error)) throw new Error(`Kubernetes refused the agent's NetworkPolicy: ${describeApiError(error)}`, { cause: error });
    const patch = [
      { op: 'add', path: '/metadata/labels', value: body.metadata!.labels },
      { op: 'add', path: '/metadata/ownerReferences', value: body.metadata!.ownerReferences ?? [] },
      { op: 'replace', path: '/spec', value: body.spec },
    ];
    await api.call('patch NetworkPolicy', () => api.networking.patchNamespacedNetworkPolicy({ name: body.metadata!.name!, namespace, body: patch }));
  }
}

/** The owner reference that makes a Job's dependents go with it (and lets the tracker tell its Jobs' objects). */
export function jobOwner(job: V1Job): V1OwnerReference {
  return { apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true, blockOwnerDeletion: false };
}

/** Deletes the NetworkPolicy of a task whose Job could not be created or handed its dependents. */
export async function deleteNetworkPolicy(api: KubeApi, namespace: string, taskId: string): Promise<void> {
  try {
    await api.call('delete NetworkPolicy', () => api.networking.deleteNamespacedNetworkPolicy({ name: networkPolicyName(taskId), namespace }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}
