import * as fs from 'node:fs';
import * as yaml from 'js-yaml';
import type { Reader } from './config';

/** What a task may add to its agent pod, per key prefix or name (empty: nothing). */
export interface PodAdditionRules {
  labelPrefixes: string[];
  annotationPrefixes: string[];
  nodeSelectorKeys: string[];
  tolerationKeys: string[];
  priorityClasses: string[];
}

/** The pod template merged into every agent pod: a Kubernetes PodTemplateSpec's `metadata` and `spec`. */
export interface AgentPodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
}

export interface KubernetesSettings {
  /** Namespaces tasks may name in `runtime_target.namespace`. */
  namespaces: string[];
  /** How long an unschedulable pod may wait for a node (a cluster autoscaler needs minutes). */
  pendingGraceSeconds: number;
  /** /ready stays up through an API server outage shorter than this (0: never). */
  apiOutageGraceSeconds: number;
  /** A watch that has heard nothing, not even a bookmark, for this long is restarted. */
  watchSilenceSeconds: number;
  /** safe-to-evict / do-not-disrupt annotations on agent pods. */
  doNotDisrupt: boolean;
  /** Pod failures other than the agent's own exit (a lost node) the Job may retry. */
  jobBackoffLimit: number;
  podTemplate: AgentPodTemplate | null;
  taskAdditions: PodAdditionRules;
}

const POD_TEMPLATE_SPEC_FIELDS = new Set([
  'imagePullSecrets', 'nodeSelector', 'tolerations', 'affinity', 'priorityClassName', 'serviceAccountName',
  'topologySpreadConstraints', 'schedulerName', 'dnsPolicy', 'dnsConfig', 'hostAliases', 'containers',
]);

export function readKubernetesSettings(r: Reader, env: Record<string, string | undefined>): KubernetesSettings {
  const namespace = r.string('KUBE_NAMESPACE', 'default');
  const names = (name: string, fallback: string[] = []) => r.raw(name)?.split(',').map((s) => s.trim()).filter(Boolean) ?? fallback;
  return {
    namespaces: [...new Set([namespace, ...names('KUBE_NAMESPACES', [namespace])])],
    pendingGraceSeconds: r.int('PENDING_GRACE_SECONDS', 900, 1, 7 * 86400),
    apiOutageGraceSeconds: r.int('KUBE_API_OUTAGE_GRACE_SECONDS', 120, 0, 86400),
    watchSilenceSeconds: r.int('KUBE_WATCH_SILENCE_SECONDS', 90, 5, 3600),
    doNotDisrupt: r.bool('KUBE_DO_NOT_DISRUPT', true),
    jobBackoffLimit: r.int('KUBE_JOB_BACKOFF_LIMIT', 6, 0, 100),
    podTemplate: readPodTemplate(env.KUBE_POD_TEMPLATE?.trim() || undefined, r.problems),
    taskAdditions: {
      labelPrefixes: names('KUBE_TASK_LABEL_PREFIXES'),
      annotationPrefixes: names('KUBE_TASK_ANNOTATION_PREFIXES'),
      nodeSelectorKeys: names('KUBE_TASK_NODE_SELECTOR_KEYS'),
      tolerationKeys: names('KUBE_TASK_TOLERATION_KEYS'),
      priorityClasses: names('KUBE_TASK_PRIORITY_CLASSES'),
    },
  };
}

/** KUBE_POD_TEMPLATE: inline JSON, or the path of a JSON or YAML file. */
export function readPodTemplate(value: string | undefined, problems: string[]): AgentPodTemplate | null {
  if (value === undefined) return null;
  let parsed: unknown;
  try {
    parsed = value.startsWith('{') ? JSON.parse(value) : yaml.load(fs.readFileSync(value, 'utf8'));
  } catch (error) {
    problems.push(`KUBE_POD_TEMPLATE must be a JSON object or the path of a JSON or YAML file (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`);
    return null;
  }
  const problem = podTemplateProblem(parsed);
  if (problem) {
    problems.push(`KUBE_POD_TEMPLATE ${problem}`);
    return null;
  }
  return parsed as AgentPodTemplate;
}

function podTemplateProblem(template: unknown): string | undefined {
  if (!isObject(template)) return 'must be an object with "metadata" and/or "spec"';
  const extra = Object.keys(template).filter((key) => key !== 'metadata' && key !== 'spec');
  if (extra.length > 0) return `may hold only "metadata" and "spec" (got "${extra.join('", "')}")`;
  const { metadata, spec } = template;
  if (metadata !== undefined && !isObject(metadata)) return 'metadata must be an object';
  for (const field of ['labels', 'annotations']) {
    const map = (metadata as Record<string, unknown> | undefined)?.[field];
    if (map !== undefined && !(isObject(map) && Object.values(map).every((v) => typeof v === 'string'))) return `metadata.${field} must map names to strings`;
  }
  if (spec === undefined) return undefined;
  if (!isObject(spec)) return 'spec must be an object';
  const unknown = Object.keys(spec).filter((key) => !POD_TEMPLATE_SPEC_FIELDS.has(key));
  if (unknown.length > 0) return `spec may not set "${unknown.join('", "')}" (allowed: ${[...POD_TEMPLATE_SPEC_FIELDS].join(', ')})`;
  const containers = spec.containers;
  if (containers !== undefined && !(Array.isArray(containers) && containers.every((c) => isObject(c) && c.name === 'agent' && Object.keys(c).every((k) => k === 'name' || k === 'resources')))) {
    return 'spec.containers may hold only {name: "agent", resources} (extra resources such as ephemeral-storage)';
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
