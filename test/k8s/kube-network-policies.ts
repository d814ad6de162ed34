import ipaddr from 'ipaddr.js';
import { KubeObject } from './kube-store';

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
