import type { V1ContainerStatus, V1Job, V1Pod } from '@kubernetes/client-node';
import { AgentState } from './runtime';

/** Waiting reasons that mean the container will not start without someone changing something. */
export const START_FAILURE_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** Why a pod cannot start yet, when it is one of the reasons above or unschedulable. */
export function startProblem(pod: V1Pod | undefined): { reason: string; message: string } | undefined {
  if (!pod) return undefined;
  const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable');
  if (unscheduled) return { reason: 'Unschedulable', message: unscheduled.message || 'the pod cannot be scheduled on any node' };
  const waiting = agentContainer(pod)?.state?.waiting;
  if (waiting?.reason && START_FAILURE_REASONS.has(waiting.reason)) {
    return { reason: waiting.reason, message: waiting.message || waiting.reason };
  }
  return undefined;
}

/**
 * What the Job and its newest Pod say about the agent. The Job's conditions decide the
 * end (Complete, Failed with DeadlineExceeded or BackoffLimitExceeded); since Kubernetes
 * 1.31 `FailureTarget` says so first, while the pods are still terminating (their SIGTERM
 * exit code 143 is not the agent's failure). The Pod gives the exit code and the
 * termination reason (OOMKilled) and says whether it has started. A pod that was evicted
 * or disrupted (`DisruptionTarget`) is replaced by the Job: the agent is starting again.
 */
export function agentStateOf(job: V1Job | undefined, pod: V1Pod | undefined): AgentState {
  if (!job) return { phase: 'gone', message: 'the Job no longer exists' };
  const conditions = job.status?.conditions ?? [];
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True')
    ?? conditions.find((c) => c.type === 'FailureTarget' && c.status === 'True');
  if (failed?.reason === 'DeadlineExceeded') {
    return { phase: 'deadline_exceeded', message: failed.message || 'Job was active longer than specified deadline' };
  }
  // The pod failure policy names a pod whose end this watch has not brought yet: its exit code
  // and reason are on their way (the Job's and the Pods' watches are separate streams).
  if (failed?.reason === 'PodFailurePolicy' && !agentContainer(pod)?.state?.terminated) {
    if (pod && !pod.metadata?.deletionTimestamp) return { phase: 'running' };
    if (!pod && failed.type === 'FailureTarget') return { phase: 'starting' };
  }
  const disruption = disruptionOf(pod);
  if (disruption && !failed && !conditions.some((c) => c.type === 'Complete' && c.status === 'True')) {
    return { phase: 'starting', message: `the pod was disrupted (${disruption}); the Job starts a new one` };
  }
  const terminated = agentContainer(pod)?.state?.terminated;
  // A pod the Job controller is deleting (deadline, failure policy) ends with SIGTERM's 143;
  // the pod's watch event may come before the Job's: its condition gives the reason.
  const ended = conditions.some((c) => ['Complete', 'Failed', 'FailureTarget'].includes(c.type) && c.status === 'True');
  if (terminated && pod?.metadata?.deletionTimestamp && !ended) return { phase: 'running' };
  if (terminated) return exited(terminated.exitCode, terminated.reason, terminated.message);
  if (conditions.some((c) => c.type === 'Complete' && c.status === 'True')) return { phase: 'exited', exitCode: 0 };
  if (failed) {
    return { phase: 'exited', exitCode: -1, reason: failed.reason, message: failed.message || `Job failed (${failed.reason ?? 'no reason given'})` };
  }
  const running = agentContainer(pod)?.state?.running;
  if (running || pod?.status?.phase === 'Running') return { phase: 'running' };
  // Only a reason that means "stuck" goes with `starting`: a slow image pull (ContainerCreating)
  // is not a failure, however long the grace.
  const problem = startProblem(pod);
  return problem ? { phase: 'starting', ...problem } : { phase: 'starting' };
}

function exited(exitCode: number, reason?: string, message?: string): AgentState {
  if (reason === 'OOMKilled') {
    return { phase: 'exited', exitCode, reason, message: `the agent was killed for using more memory than its limit (OOMKilled, exit code ${exitCode})` };
  }
  const state: AgentState = { phase: 'exited', exitCode };
  if (reason && reason !== 'Completed') state.reason = reason;
  if (message) state.message = message;
  return state;
}

/** The reason and message of a pod's DisruptionTarget condition (eviction, preemption, node drain). */
export function disruptionOf(pod: V1Pod | undefined): string | undefined {
  const condition = pod?.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  return condition ? [condition.reason, condition.message].filter(Boolean).join(': ') || 'DisruptionTarget' : undefined;
}

export function agentContainer(pod: V1Pod | undefined): V1ContainerStatus | undefined {
  const statuses = pod?.status?.containerStatuses ?? [];
  return statuses.find((s) => s.name === 'agent') ?? statuses[0];
}

/** Same phase and same details: no change worth reporting. */
export function sameState(a: AgentState | undefined, b: AgentState): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}
