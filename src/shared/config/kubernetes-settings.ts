import * as fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
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
  /** An API request (not a watch or log follow) unanswered this long is aborted and counts as the server unreachable. */
  apiTimeoutSeconds: number;
  /** A watch that has heard nothing, not even a bookmark, for this long is restarted. */
  watchSilenceSeconds: number;
  /** safe-to-evict / do-not-disrupt annotations on agent pods. */
  doNotDisrupt: boolean;
  /** Pod failures other than the agent's own exit (a lost node) the Job may retry. */
  jobBackoffLimit: number;
  podTemplate: AgentPodTemplate | null;
  taskAdditions: PodAdditionRules;
}

const POD_TEMPLATE_SPEC_FIELDS = [
  'imagePullSecrets', 'nodeSelector', 'tolerations', 'affinity', 'priorityClassName', 'serviceAccountName',
  'topologySpreadConstraints', 'schedulerName', 'dnsPolicy', 'dnsConfig', 'hostAliases', 'containers',
] as const;

/** A message for an object's wrong type or its keys that are not allowed. */
function objectError(what: string, allowed: string) {
  return (issue: z.core.$ZodRawIssue) => issue.code === 'unrecognized_keys'
    ? `may not set "${issue.keys.join('", "')}" (allowed: ${allowed})`
    : `must be ${what}`;
}

const nameMap = z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must map names to strings' });

/** Only the parts of a pod the agent's Job may take from the operator; the rest is the dispatcher's. */
const podTemplateSchema = z.strictObject({
  metadata: z.object({ labels: nameMap.optional(), annotations: nameMap.optional() }, { error: 'must be an object' }).optional(),
  spec: z.strictObject({
    ...Object.fromEntries(POD_TEMPLATE_SPEC_FIELDS.map((field) => [field, z.unknown().optional()])),
    containers: z.array(
      z.strictObject({ name: z.literal('agent', { error: 'must be "agent"' }), resources: z.unknown().optional() }, { error: objectError('{name: "agent", resources}', 'name, resources') }),
      { error: 'must be a list of {name: "agent", resources} (extra resources such as ephemeral-storage)' },
    ).optional(),
  }, { error: objectError('an object', POD_TEMPLATE_SPEC_FIELDS.join(', ')) }).optional(),
}, { error: objectError('an object with "metadata" and/or "spec"', 'metadata, spec') });

export function readKubernetesSettings(r: Reader, env: Record<string, string | undefined>): KubernetesSettings {
  const namespace = r.string('KUBE_NAMESPACE', 'default');
  const names = (name: string, fallback: string[] = []) => r.raw(name)?.split(',').map((s) => s.trim()).filter(Boolean) ?? fallback;
  return {
    namespaces: [...new Set([namespace, ...names('KUBE_NAMESPACES', [namespace])])],
    pendingGraceSeconds: r.int('PENDING_GRACE_SECONDS', 900, 1, 7 * 86400),
    apiOutageGraceSeconds: r.int('KUBE_API_OUTAGE_GRACE_SECONDS', 120, 0, 86400),
    // 30 s: docs/dispatcher.md says why. Above 300 s the HTTP client's own header and body time-outs end a request first.
    apiTimeoutSeconds: r.int('KUBE_API_TIMEOUT_SECONDS', 30, 1, 300),
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
    parsed = value.startsWith('{') ? JSON.parse(value) : parseYaml(fs.readFileSync(value, 'utf8'));
  } catch (error) {
    problems.push(`KUBE_POD_TEMPLATE must be a JSON object or the path of a JSON or YAML file (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`);
    return null;
  }
  const result = podTemplateSchema.safeParse(parsed);
  if (!result.success) {
    const [issue] = result.error.issues;
    const where = issue.path.length > 0 ? ` ${issue.path.join('.')}` : '';
    problems.push(`KUBE_POD_TEMPLATE${where} ${issue.message}`);
    return null;
  }
  return result.data as AgentPodTemplate;
}
