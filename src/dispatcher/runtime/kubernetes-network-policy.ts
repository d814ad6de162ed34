import { isIP } from 'node:net';
import type { V1Job, V1NetworkPolicy, V1NetworkPolicyEgressRule, V1NetworkPolicyPort } from '@kubernetes/client-node';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import type { AgentIsolation } from '../../shared/task-protocol/isolation';
import { describeApiError, isConflict, isNotFound, KubeApi } from './kubernetes-client';
import { checkKnownFields } from './kubernetes-manifest-fields';
import { dnsLabel, ManifestError, managedLabels, ManifestSettings, TASK_ID_LABEL } from './kubernetes-manifests';
import { ownedByJob } from './kubernetes-secrets';
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
 * Never reached by `open` egress unless a task's `allow` names them: private networks (where
 * cluster pods, services and nodes live), loopback, link-local (169.254.169.254, the cloud
 * metadata service) and carrier-grade NAT; and their IPv6 counterparts.
 */
export const PRIVATE_IPV4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8', '0.0.0.0/8'];
export const PRIVATE_IPV6 = ['fc00::/7', 'fe80::/10', '::1/128', '::ffff:0:0/96', '64:ff9b::/96'];

export const networkPolicyName = (taskId: string): string => dnsLabel('agent', taskId, '-egress');

/**
 * The NetworkPolicy that limits one agent pod's egress (selected by its task-id label).
 * It is created before the Job, so the pod never runs without it, and then handed to the
 * Job (`adoptNetworkPolicy`) so it goes with it: `none` allows nothing, `dispatcher` DNS and
 * the dispatcher, `open` that plus the public internet. The task's `allow` entries are
 * added in every mode (NetworkPolicy rules add up, so they open even private ranges).
 */
export function buildNetworkPolicy(spec: AgentSpec, settings: ManifestSettings, dispatcher: DispatcherEndpoint, owner?: { name: string; uid: string }): V1NetworkPolicy {
  const { network } = spec.isolation;
  const egress: V1NetworkPolicyEgressRule[] = [];
  if (network.egress !== 'none') egress.push(dnsRule(), ...dispatcherRules(dispatcher));
  if (network.egress === 'open') egress.push(publicInternetRule());
  egress.push(...allowRules(network.allow));
  const policy: V1NetworkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(spec.taskId),
      namespace: spec.namespace || settings.namespace,
      labels: managedLabels(settings, spec.taskId),
      ...(owner ? { ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: false }] } : {}),
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

/** Cluster DNS: port 53 of the pods in kube-system. */
function dnsRule(): V1NetworkPolicyEgressRule {
  return {
    to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
    ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
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

function publicInternetRule(): V1NetworkPolicyEgressRule {
  return { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_IPV4 } }, { ipBlock: { cidr: '::/0', except: PRIVATE_IPV6 } }] };
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
 * Creates the agent's NetworkPolicy. One left by an earlier Job of the same task (a retry
 * after a crash) would be collected with that Job, so it is replaced.
 */
export async function createNetworkPolicy(api: KubeApi, namespace: string, body: V1NetworkPolicy): Promise<void> {
  const create = () => api.call('create NetworkPolicy', () => api.networking.createNamespacedNetworkPolicy({ namespace, body }));
  try {
    await create();
  } catch (error) {
    if (!isConflict(error)) throw new Error(`Kubernetes refused the agent's NetworkPolicy: ${describeApiError(error)}`);
    await api.call('delete NetworkPolicy', () => api.networking.deleteNamespacedNetworkPolicy({ name: body.metadata!.name!, namespace }));
    await create();
  }
}

/** Makes the task's Job the owner of its NetworkPolicy, created before the Job existed. */
export async function adoptNetworkPolicy(api: KubeApi, namespace: string, job: V1Job, taskId: string): Promise<void> {
  const name = networkPolicyName(taskId);
  try {
    await api.call('patch NetworkPolicy owner', () => api.networking.patchNamespacedNetworkPolicy({ name, namespace, body: ownedByJob(job) }));
  } catch (error) {
    throw new Error(`Kubernetes refused to hand the agent's NetworkPolicy to its Job: ${describeApiError(error)}`);
  }
}

/** Deletes the NetworkPolicy of a task whose Job could not be created or handed its dependents. */
export async function deleteNetworkPolicy(api: KubeApi, namespace: string, taskId: string): Promise<void> {
  try {
    await api.call('delete NetworkPolicy', () => api.networking.deleteNamespacedNetworkPolicy({ name: networkPolicyName(taskId), namespace }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}
