import type { V1Job, V1PodFailurePolicy } from '@kubernetes/client-node';
import { AgentPodTemplate } from '../../shared/config/kubernetes-settings';
import { AGENT_CONTAINER } from './kubernetes-manifests';

/** The cluster autoscaler and Karpenter leave a node alone while a pod with these runs. */
export const DO_NOT_DISRUPT_ANNOTATIONS: Readonly<Record<string, string>> = {
  'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false',
  'karpenter.sh/do-not-disrupt': 'true',
};

/** How the dispatcher's settings shape every agent Job beyond what the task says. */
export interface JobShaping {
  doNotDisrupt: boolean;
  /** Retries for pod failures that are neither the agent's exit nor a disruption (a lost node). */
  backoffLimit: number;
  podTemplate: AgentPodTemplate | null;
}

/**
 * A disrupted pod (eviction, preemption, node drain: `DisruptionTarget`) does not count
 * against the Job, which starts a new pod, and the task goes on; any exit of the agent's
 * own ends the Job at once, whatever the backoff limit.
 */
export function podFailurePolicy(): V1PodFailurePolicy {
  return {
    rules: [
      { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
      { action: 'FailJob', onExitCodes: { containerName: AGENT_CONTAINER, operator: 'NotIn', values: [0] } },
    ],
  };
}

/**
 * Applies the shaping to a Job built from the task: the disruption policy and
 * annotations, then the dispatcher's pod template (labels and annotations added, the
 * Job's own labels winning; scheduling fields and imagePullSecrets set; extra container
 * resources such as ephemeral-storage added without replacing the task's cpu and memory).
 */
export function shapeJob(job: V1Job, shaping: JobShaping): void {
  const spec = job.spec!;
  const template = spec.template;
  spec.backoffLimit = shaping.backoffLimit;
  spec.podFailurePolicy = podFailurePolicy();
  const metadata = (template.metadata ??= {});
  const fromTemplate = shaping.podTemplate?.metadata;
  metadata.labels = { ...fromTemplate?.labels, ...metadata.labels };
  metadata.annotations = { ...fromTemplate?.annotations, ...(shaping.doNotDisrupt ? DO_NOT_DISRUPT_ANNOTATIONS : {}), ...metadata.annotations };
  if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
  mergePodSpec(template.spec as unknown as Record<string, unknown>, shaping.podTemplate?.spec ?? {});
}

function mergePodSpec(pod: Record<string, unknown>, extra: Record<string, unknown>): void {
  for (const [field, value] of Object.entries(extra)) {
    if (field === 'containers') continue;
    // The Job's own choices (restartPolicy, no service account token) stay; the template fills the rest.
    if (pod[field] === undefined) pod[field] = structuredClone(value);
  }
  const agent = (pod.containers as { name: string; resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }[])
    .find((container) => container.name === AGENT_CONTAINER);
  const extraResources = (extra.containers as { name: string; resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }[] | undefined)
    ?.find((container) => container.name === AGENT_CONTAINER)?.resources;
  if (!agent || !extraResources) return;
  const resources = (agent.resources ??= {});
  resources.requests = { ...extraResources.requests, ...resources.requests };
  resources.limits = { ...extraResources.limits, ...resources.limits };
}
