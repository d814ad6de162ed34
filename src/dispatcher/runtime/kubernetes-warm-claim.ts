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
 * agent's Job so they go with it, and the label on the pod. The pod started with egress to DNS
 * and the dispatcher only (its pool policy); policies add up, so once the label and the task's
 * policy are both there it has the task's egress, which always includes those, and until then
 * it has only the pool's. The three writes therefore go together, all on the rate limiter's
 * urgent lane: an agent waits on its claim, while the pool's refill (pods being created at the
 * same moment) can wait. The Job and its pods come from the watches (`watched`) when they have
 * both, else from two reads beside each other: at 20 claims a second those reads were two of
 * five calls a claim against the client's 50 a second. A pod that is gone or ended takes no task.
 */
export async function readyWarmPod(parts: WarmClaimParts, namespace: string, jobName: string, agentKey: string, spec: AgentSpec, watched?: { job?: V1Job; pods: V1Pod[] }): Promise<void> {
  const { api } = parts;
  await api.urgently(async () => {
    const [job, podList] = watched?.job && watched.pods.length > 0 ? [watched.job, { items: watched.pods }] : await Promise.all([
      api.call('read Job', () => api.batch.readNamespacedJob({ name: jobName, namespace })),
      api.call('list Pods', () => api.core.listNamespacedPod({ namespace, labelSelector: `${TASK_ID_LABEL}=${labelValue(agentKey)}` })),
    ]);
    const pods = podList.items.filter(isLive);
    if (pods.length === 0) throw new Error(`the warm agent ${agentKey} has no live pod`);
    const owner = jobOwner(job);
    const policy = buildNetworkPolicy(spec, parts.settings, parts.egress, owner);
    policy.spec!.podSelector = { matchLabels: { [CLAIMED_TASK_LABEL]: labelValue(spec.taskId) } };
    const body = [{ op: 'add', path: `/metadata/labels/${CLAIMED_TASK_LABEL}`, value: labelValue(spec.taskId) }];
    await Promise.all([
      createNetworkPolicy(api, namespace, policy),
      parts.secrets.create(namespace, buildSecret(spec, parts.settings, owner)),
      ...pods.map((pod) => api.call('label Pod', () => api.core.patchNamespacedPod({ name: pod.metadata!.name!, namespace, body }))),
    ]);
  });
}

function isLive(pod: V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}
