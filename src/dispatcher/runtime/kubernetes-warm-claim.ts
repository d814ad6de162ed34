import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { KubeApi } from './kubernetes-client';
import { buildSecret, labelValue, ManifestSettings, TASK_ID_LABEL } from './kubernetes-manifests';
import { buildNetworkPolicy, createNetworkPolicy, EgressSettings, jobOwner } from './kubernetes-network-policy';
import { AgentSecrets } from './kubernetes-secrets';
import { AgentSpec } from './runtime';

/** The label a warm pod gets when a task is given to it; the task's NetworkPolicy selects the pod by it. */
export const CLAIMED_TASK_LABEL = 'claimed-task-id';

export interface WarmClaimParts {
  api: KubeApi;
  settings: ManifestSettings;
  egress: EgressSettings;
  secrets: AgentSecrets;
}

/**
 * Readies a warm pod for the task given to it, before the claim is answered: the task's own
 * NetworkPolicy (selecting CLAIMED_TASK_LABEL=<task>) and its Secret, both owned by the pool
 * agent's Job so they go with it, then the label on the pod. The pod started with egress to DNS
 * and the dispatcher only (its pool policy); policies add up, so from here it has the task's
 * egress, which always includes those. A pod that is gone or ended takes no task.
 */
export async function readyWarmPod(parts: WarmClaimParts, namespace: string, jobName: string, agentKey: string, spec: AgentSpec): Promise<void> {
  const { api } = parts;
  const job: V1Job = await api.call('read Job', () => api.batch.readNamespacedJob({ name: jobName, namespace }));
  const pods = (await api.call('list Pods', () => api.core.listNamespacedPod({ namespace, labelSelector: `${TASK_ID_LABEL}=${labelValue(agentKey)}` }))).items.filter(isLive);
  if (pods.length === 0) throw new Error(`the warm agent ${agentKey} has no live pod`);
  const owner = jobOwner(job);
  const policy = buildNetworkPolicy(spec, parts.settings, parts.egress, owner);
  policy.spec!.podSelector = { matchLabels: { [CLAIMED_TASK_LABEL]: labelValue(spec.taskId) } };
  await createNetworkPolicy(api, namespace, policy);
  await parts.secrets.create(namespace, buildSecret(spec, parts.settings, owner));
  for (const pod of pods) {
    const body = [{ op: 'add', path: `/metadata/labels/${CLAIMED_TASK_LABEL}`, value: labelValue(spec.taskId) }];
    await api.call('label Pod', () => api.core.patchNamespacedPod({ name: pod.metadata!.name!, namespace, body }));
  }
}

function isLive(pod: V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}
