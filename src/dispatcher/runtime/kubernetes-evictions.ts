import type { V1Job } from '@kubernetes/client-node';
import { DISRUPTED_PODS_ANNOTATION } from './kubernetes-manifests';
import { AgentState } from './runtime';
import type { TrackedAgent } from './kubernetes-tracker';

/** The reason of the final state of a task whose pods were disrupted too often. */
export const EVICTION_LIMIT_REASON = 'EvictionLimit';

/** What the tracker asks of the backend as it counts disruptions. */
export interface EvictionHooks {
  /** Writes the uids of the task's disrupted pods on its Job (DISRUPTED_PODS_ANNOTATION). */
  recordDisruptions(taskId: string, agent: TrackedAgent, uids: string[]): Promise<void>;
  /** Stops the replacement pod the Job made (suspends the Job: its pods end under their policy). */
  stopOverEvicted(taskId: string, agent: TrackedAgent): Promise<void>;
}

/** The uids the Job's annotation records as disrupted. */
export function disruptedPods(job: V1Job): string[] {
  const value = job.metadata?.annotations?.[DISRUPTED_PODS_ANNOTATION];
  return value ? value.split(',').filter(Boolean) : [];
}

/**
 * Each disrupted pod needed a replacement; more disruptions than AGENT_MAX_EVICTION_REPLACEMENTS
 * allows replacements end the task, with a message naming the setting.
 */
export function evictionLimitState(disruptions: number, maxReplacements: number | null): AgentState | undefined {
  if (maxReplacements === null || disruptions <= maxReplacements) return undefined;
  return {
    phase: 'exited',
    exitCode: -1,
    reason: EVICTION_LIMIT_REASON,
    message: `the agent's pod was evicted or disrupted ${disruptions} times; AGENT_MAX_EVICTION_REPLACEMENTS (${maxReplacements}) allows no more replacements`,
  };
}

/** The JSON patch that records `uids` on the Job (`/` in the key escaped as `~1`, RFC 6901). */
export function recordDisruptionsPatch(job: V1Job | undefined, uids: string[]): object[] {
  const value = uids.join(',');
  if (!job?.metadata?.annotations) return [{ op: 'add', path: '/metadata/annotations', value: { [DISRUPTED_PODS_ANNOTATION]: value } }];
  return [{ op: 'add', path: `/metadata/annotations/${DISRUPTED_PODS_ANNOTATION.replace(/~/g, '~0').replace(/\//g, '~1')}`, value }];
}
