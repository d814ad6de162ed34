import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { EGRESS_MODES, EgressMode, RUNTIME_CLASS_NAME } from '../task-protocol/isolation';
import { commaList, jsonText } from './env-reader';

/** The settings a reader of the environment offers (config.ts's Reader). */
interface SettingsReader {
  problems: string[];
  raw(name: string): string | undefined;
  int(name: string, fallback: number, min: number, max: number): number;
  bool(name: string, fallback: boolean): boolean;
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T;
  stringMap(name: string): Record<string, string>;
  parse<T>(name: string, fallback: T, schema: z.ZodType<T>, wants: string): T;
}

/** A NetworkPolicy peer naming the cluster DNS (a namespace and pod selector, or an ipBlock). */
export interface DnsPeer {
  namespaceSelector?: { matchLabels?: Record<string, string> };
  podSelector?: { matchLabels?: Record<string, string> };
  ipBlock?: { cidr: string };
}

const labels = z.strictObject({ matchLabels: z.record(z.string(), z.string()) });
const dnsPeers = jsonText.pipe(z.array(z.strictObject({ namespaceSelector: labels.optional(), podSelector: labels.optional(), ipBlock: z.strictObject({ cidr: z.string() }).optional() })).nonempty());
/** kube-dns (CoreDNS keeps the label) in kube-system. */
export const KUBE_DNS_PEERS: DnsPeer[] = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }];

/** A CIDR block ipaddr.js can read (`10.0.0.0/8`, `fd00::/8`), normalised to its network address. */
export const cidrList = commaList.pipe(z.array(z.string().refine((cidr) => {
  try {
    ipaddr.parseCIDR(cidr);
    return true;
  } catch {
    return false;
  }
})));

/** The dispatcher's defaults for the isolation of agents (a task's own fields win). */
export interface AgentIsolationDefaults {
  runtimeClass: string | null;
  egress: EgressMode;
  runAsNonRoot: boolean;
  /** null: the image's user. */
  runAsUser: number | null;
  readOnlyRootFilesystem: boolean;
  /** Labels of the dispatcher's pods, which `dispatcher` egress lets agents reach. */
  dispatcherPodLabels: Record<string, string>;
  /** Their namespace; empty: KUBE_NAMESPACE. */
  dispatcherNamespace: string;
  /** The docker engine's limit on processes in one agent container. */
  pidsLimit: number;
  /** Where agents resolve names (AGENT_DNS_PEERS, AGENT_DNS_PORTS): kube-dns by label unless set. */
  dns: { peers: DnsPeer[]; ports: number[] };
  /** AGENT_EGRESS_DENY_CIDRS: ranges `open` egress never reaches, added to the built-in list. */
  egressDenyCidrs: string[];
}

export function readIsolationDefaults(r: SettingsReader): AgentIsolationDefaults {
  const runtimeClass = r.raw('AGENT_RUNTIME_CLASS') ?? null;
  if (runtimeClass !== null && !RUNTIME_CLASS_NAME.test(runtimeClass)) {
    r.problems.push(`AGENT_RUNTIME_CLASS must be a RuntimeClass name (got "${runtimeClass}")`);
  }
  const user = r.raw('AGENT_RUN_AS_USER');
  return {
    runtimeClass,
    egress: r.oneOf<EgressMode>('AGENT_EGRESS', 'dispatcher', EGRESS_MODES),
    runAsNonRoot: r.bool('AGENT_RUN_AS_NON_ROOT', true),
    runAsUser: user === 'image' ? null : r.int('AGENT_RUN_AS_USER', 65532, 0, 2147483647),
    readOnlyRootFilesystem: r.bool('AGENT_READ_ONLY_ROOT_FILESYSTEM', true),
    dispatcherPodLabels: r.stringMap('AGENT_DISPATCHER_POD_LABELS'),
    dispatcherNamespace: r.raw('AGENT_DISPATCHER_NAMESPACE') ?? '',
    pidsLimit: r.int('AGENT_PIDS_LIMIT', 1024, 16, 1_000_000),
    dns: {
      peers: r.parse('AGENT_DNS_PEERS', KUBE_DNS_PEERS, dnsPeers as z.ZodType<DnsPeer[]>, 'a JSON array of NetworkPolicy peers (namespaceSelector/podSelector matchLabels, or ipBlock.cidr)'),
      ports: r.parse('AGENT_DNS_PORTS', [53], commaList.pipe(z.array(z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(1).max(65535))).nonempty()), 'a comma-separated list of ports'),
    },
    egressDenyCidrs: r.parse('AGENT_EGRESS_DENY_CIDRS', [], cidrList, 'a comma-separated list of CIDR blocks'),
  };
}
