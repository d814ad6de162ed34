import ipaddr from 'ipaddr.js';
import { KubeObject, KubeStore, StoredEvent } from './kube-store';

type Json = Record<string, any>;

/**
 * The NetworkPolicy validation of the real API server (pkg/apis/networking/validation) that
 * a client can get wrong: a pod selector, policy types, ports, and ipBlocks whose `except`
 * entries are strict subsets of their `cidr` of the same family.
 */
export function networkPolicyProblems(policy: KubeObject): string[] {
  const spec = policy.spec as Json | undefined;
  if (!spec || typeof spec.podSelector !== 'object') return ['spec.podSelector: Required value'];
  const problems: string[] = [];
  for (const type of spec.policyTypes ?? []) {
    if (type !== 'Ingress' && type !== 'Egress') problems.push(`spec.policyTypes: Unsupported value: "${type}"`);
  }
  (spec.egress ?? []).forEach((rule: Json, index: number) => {
    const at = `spec.egress[${index}]`;
    (rule.ports ?? []).forEach((port: Json, p: number) => problems.push(...portProblems(port, `${at}.ports[${p}]`)));
    (rule.to ?? []).forEach((peer: Json, t: number) => problems.push(...peerProblems(peer, `${at}.to[${t}]`)));
  });
  return problems;
}

function portProblems(port: Json, at: string): string[] {
  const problems: string[] = [];
  if (port.protocol !== undefined && !['TCP', 'UDP', 'SCTP'].includes(port.protocol)) problems.push(`${at}.protocol: Unsupported value: "${port.protocol}"`);
  if (port.port !== undefined && (!Number.isInteger(port.port) || port.port < 1 || port.port > 65535)) problems.push(`${at}.port: Invalid value: ${port.port}`);
  return problems;
}

function peerProblems(peer: Json, at: string): string[] {
  if (!peer.ipBlock) return [];
  if (peer.podSelector || peer.namespaceSelector) return [`${at}: Forbidden: may not specify more than 1 peer type when ipBlock is set`];
  let block: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    block = ipaddr.parseCIDR(peer.ipBlock.cidr);
  } catch {
    return [`${at}.ipBlock.cidr: Invalid value: "${peer.ipBlock.cidr}"`];
  }
  return (peer.ipBlock.except ?? []).flatMap((except: string, e: number) => {
    try {
      const inner = ipaddr.parseCIDR(except);
      const inside = inner[0].kind() === block[0].kind() && inner[1] > block[1] && inner[0].match(block as never);
      return inside ? [] : [`${at}.ipBlock.except[${e}]: Invalid value: "${except}": must be a strict subset of \`cidr\``];
    } catch {
      return [`${at}.ipBlock.except[${e}]: Invalid value: "${except}"`];
    }
  });
}

/** True when `selector` (a LabelSelector with matchLabels and matchExpressions) selects `labels`. */
export function selects(selector: Json | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  const byLabel = Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(([key, value]) => labels[key] === value);
  const byExpression = ((selector.matchExpressions ?? []) as { key: string; operator: string; values?: string[] }[]).every((e) => {
    if (e.operator === 'In') return e.key in labels && (e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'NotIn') return !(e.key in labels) || !(e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'Exists') return e.key in labels;
    return !(e.key in labels);
  });
  return byLabel && byExpression;
}

/**
 * Whether some NetworkPolicy isolates the pod's egress, as a CNI plugin decides it: a pod
 * that no policy with an Egress type selects has open egress (cloud metadata included).
 */
export function egressIsolated(store: KubeStore, pod: KubeObject): boolean {
  return store.list('networkpolicies', { namespace: pod.metadata.namespace }).some((policy) => {
    const spec = (policy.spec ?? {}) as Json;
    const types: string[] = spec.policyTypes ?? (spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);
    return types.includes('Egress') && selects(spec.podSelector, pod.metadata.labels ?? {});
  });
}

/**
 * Watches every change of the store and records each moment a pod exists (Terminating
 * included: its container may still run) while no policy isolates its egress.
 */
export class EgressWindows {
  readonly seen: { pod: string; after: string; terminating: boolean }[] = [];
  private readonly listener = (event: StoredEvent) => this.check(event);

  constructor(private readonly store: KubeStore) {
    store.changes.on('change', this.listener);
  }

  stop(): void {
    this.store.changes.off('change', this.listener);
  }

  private check(event: StoredEvent): void {
    for (const pod of this.store.list('pods')) {
      if (egressIsolated(this.store, pod)) continue;
      this.seen.push({ pod: pod.metadata.name, after: `${event.type} ${event.resource}/${event.object.metadata.name}`, terminating: Boolean(pod.metadata.deletionTimestamp) });
    }
  }
}
