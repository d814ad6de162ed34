import { Logger } from '@nestjs/common';
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { TASK_ID_LABEL } from './kubernetes-manifests';
import { disruptedPods, evictionLimitState, EvictionHooks } from './kubernetes-evictions';
import { agentStateOf, disruptionOf, sameState, startProblem } from './kubernetes-state';
import { WatchedChange } from './kubernetes-watch';
import { DueTimes } from './kubernetes-due-times';
import { RecentKeys } from '../../shared/state/recent-keys';
import { AgentState, AgentStateListener, hasEnded, StartGraces } from './runtime';

/** What is known of one task's Job and Pods, from the watches and direct reads. */
export interface TrackedAgent {
  namespace: string;
  job?: V1Job;
  jobSeen: boolean;
  pods: Map<string, V1Pod>;
  /** What the start grace is counting for: a pod that cannot start or be scheduled, or a Job without a pod. */
  stuckOn?: 'pod' | 'unschedulable' | 'pod creation';
  stuckSince?: number;
  /** The backend is asking the cluster why the Job has no pod. */
  checkingCreation?: boolean;
  reported?: AgentState;
  final?: AgentState;
  givingUp?: boolean;
  /** Uids of this task's pods seen disrupted, beyond those the Job's annotation already records. */
  disrupted: Set<string>;
  /** A recording of `disrupted` on the Job is under way. */
  recordingDisruptions?: boolean;
}

export type StartProblem = { reason: string; message: string };

/** What the tracker asks of the backend when an agent cannot start. */
export interface StartFailureHooks extends EvictionHooks {
  /** The message to report: the runtime's, plus whatever the cluster adds (a warning event). */
  describe(agent: TrackedAgent, problem: StartProblem, pod: V1Pod | undefined): Promise<string>;
  /**
   * Why the Job controller could not create the Job's pod (its latest FailedCreate warning
   * event), or undefined when nothing says it failed (the pod exists, or is on its way).
   */
  podCreationProblem(taskId: string, agent: TrackedAgent): Promise<StartProblem | undefined>;
  /** Stops whatever keeps retrying (deletes the Job). */
  abandon(taskId: string, agent: TrackedAgent, problem: StartProblem): Promise<void>;
}

/** How often a Job still without a pod after the grace is checked again for FailedCreate events. */
const CREATION_RECHECK_MS = 10_000;

/**
 * Turns Job and Pod changes into AgentStates per task: keeps the newest objects, applies
 * START_GRACE_SECONDS to a pod that cannot start and to a Job whose pod is not created
 * (quota, LimitRange, missing ServiceAccount), remembers final states (a Job deleted
 * afterwards does not turn them into `gone`) and tells listeners of every change.
 */
export class AgentTracker {
  private readonly logger = new Logger('KubernetesAgents');
  private readonly agents = new Map<string, TrackedAgent>();
  private readonly listeners: AgentStateListener[] = [];
  /** When agents waiting out a start grace are looked at again: one timer for all of them. */
  private readonly graceDue = new DueTimes((taskId) => this.evaluate(taskId));
  /**
   * Uids of Jobs deleted or forgotten. Their pods are collected after them and may still
   * change meanwhile (the kubelet keeps writing their status): such an event must not track
   * the task again as a new agent, `starting` after its final state.
   */
  private readonly endedJobs = new RecentKeys(10_000);
  private closed = false;

  /** AGENT_MAX_EVICTION_REPLACEMENTS; null: a disrupted pod is always replaced. */
  constructor(private readonly graces: StartGraces, private readonly hooks: StartFailureHooks, private readonly maxEvictionReplacements: number | null = null) {}

  onStateChange(listener: AgentStateListener): void {
    this.listeners.push(listener);
  }

  get(taskId: string): TrackedAgent | undefined {
    return this.agents.get(taskId);
  }

  track(taskId: string, namespace: string): TrackedAgent {
    let agent = this.agents.get(taskId);
    if (!agent) {
      agent = { namespace, jobSeen: false, pods: new Map(), disrupted: new Set() };
      this.agents.set(taskId, agent);
    }
    return agent;
  }

  forget(taskId: string): void {
    const uid = this.agents.get(taskId)?.job?.metadata?.uid;
    if (uid) this.endedJobs.add(uid);
    this.graceDue.delete(taskId);
    this.agents.delete(taskId);
  }

  jobChanged(namespace: string, { type, object }: WatchedChange<V1Job>): void {
    const taskId = object.metadata?.labels?.[TASK_ID_LABEL];
    if (type === 'DELETED' && object.metadata?.uid) this.endedJobs.add(object.metadata.uid);
    if (!taskId || (type === 'DELETED' && !this.agents.has(taskId))) return;
    const agent = this.track(taskId, namespace);
    // A finished agent's Job deleted by its TTL: nothing more will happen to it.
    if (type === 'DELETED' && agent.final) return this.forget(taskId);
    agent.job = type === 'DELETED' ? undefined : object;
    agent.jobSeen = true;
    this.evaluate(taskId);
  }

  podChanged(namespace: string, { type, object }: WatchedChange<V1Pod>): void {
    const taskId = object.metadata?.labels?.[TASK_ID_LABEL];
    // A pod going away (deleted, or Terminating after its Job was collected) of a task already forgotten says nothing new.
    const leaving = type === 'DELETED' || Boolean(object.metadata?.deletionTimestamp);
    if (!taskId || !object.metadata?.name || (leaving && !this.agents.has(taskId))) return;
    if (this.endedJobs.has(controllerOf(object)?.uid ?? '')) return;
    const agent = this.track(taskId, namespace);
    if (!madeBy(object, agent.job)) return;
    if (type === 'DELETED') agent.pods.delete(object.metadata.name);
    else agent.pods.set(object.metadata.name, object);
    if (disruptionOf(object) && object.metadata.uid) agent.disrupted.add(object.metadata.uid);
    this.evaluate(taskId);
  }

  /** Takes in what a direct read found (status before the watch caught up, recovery). */
  absorb(taskId: string, namespace: string, job: V1Job, pods: V1Pod[]): void {
    const agent = this.track(taskId, namespace);
    agent.job = job;
    agent.jobSeen = true;
    for (const pod of pods) {
      if (!pod.metadata?.name || !madeBy(pod, job)) continue;
      agent.pods.set(pod.metadata.name, pod);
      if (disruptionOf(pod) && pod.metadata.uid) agent.disrupted.add(pod.metadata.uid);
    }
  }

  /** The Jobs of `namespace` that are there and not being deleted (their pods need their policy). */
  liveJobs(namespace: string): V1Job[] {
    return [...this.agents.values()].filter((a) => a.namespace === namespace && a.job && !a.job.metadata?.deletionTimestamp).map((a) => a.job!);
  }

  /** The watch still knows a pod of this task (a Terminating one included). */
  hasLivePods(taskId: string): boolean {
    return (this.agents.get(taskId)?.pods.size ?? 0) > 0;
  }

  newestPod(taskId: string): V1Pod | undefined {
    const agent = this.agents.get(taskId);
    return agent ? [...agent.pods.values()].sort(byCreation).at(-1) : undefined;
  }

  /** Works out the task's state from what is known, applies the start grace, and reports changes. */
  evaluate(taskId: string): AgentState {
    const agent = this.agents.get(taskId);
    if (!agent) return { phase: 'gone' };
    if (agent.final) return agent.final;
    const pod = this.newestPod(taskId);
    const overEvicted = this.overEvicted(taskId, agent);
    const state: AgentState = overEvicted ?? (agent.job || agent.jobSeen ? agentStateOf(agent.job, pod) : { phase: 'starting' });
    if (!overEvicted) this.applyStartGrace(taskId, agent, state, pod);
    if (hasEnded(state)) agent.final = state;
    this.report(taskId, agent, state);
    return state;
  }

  /**
   * The task ends once its pods were disrupted more often than AGENT_MAX_EVICTION_REPLACEMENTS
   * allows replacements (an agent that gets itself evicted, by using more ephemeral storage or
   * memory than its node can spare, would otherwise be replaced for ever). The count is the
   * Job's annotation plus what the watch saw since; new uids are recorded on the Job, so
   * another replica and the next process count them too.
   */
  private overEvicted(taskId: string, agent: TrackedAgent): AgentState | undefined {
    if (!agent.job) return undefined;
    const recorded = disruptedPods(agent.job);
    const unrecorded = [...agent.disrupted].filter((uid) => !recorded.includes(uid));
    if (unrecorded.length > 0 && !agent.recordingDisruptions) {
      agent.recordingDisruptions = true;
      void this.hooks.recordDisruptions(taskId, agent, [...recorded, ...unrecorded])
        .finally(() => (agent.recordingDisruptions = false));
    }
    const state = evictionLimitState(recorded.length + unrecorded.length, this.maxEvictionReplacements);
    if (state && !agent.givingUp) {
      agent.givingUp = true;
      void this.hooks.stopOverEvicted(taskId, agent);
    }
    return state;
  }

  close(): void {
    this.closed = true;
    this.graceDue.close();
  }

  /**
   * A pod that cannot start, or a Job that has no pod at all, is given START_GRACE_SECONDS
   * (an unschedulable pod PENDING_GRACE_SECONDS)
   * from the moment it was first seen so; a timer re-evaluates it then, since no event may
   * arrive to do so. A Job still without a pod then fails only if the cluster says why
   * (a FailedCreate event); otherwise it is checked again later.
   */
  private applyStartGrace(taskId: string, agent: TrackedAgent, state: AgentState, pod: V1Pod | undefined): void {
    const problem = state.phase === 'starting' ? startProblem(pod) : undefined;
    // A suspended Job has no pod by design: its submit is still under way (its Secret and policy may
    // be waiting in the rate limiter's queue behind a burst) or it is being stopped.
    const podless = state.phase === 'starting' && !pod && agent.job !== undefined && agent.job.spec?.suspend !== true;
    const stuckOn = problem ? (problem.reason === 'Unschedulable' ? 'unschedulable' : 'pod') : podless ? 'pod creation' : undefined;
    if (stuckOn !== agent.stuckOn) {
      agent.stuckOn = stuckOn;
      agent.stuckSince = undefined;
      this.graceDue.delete(taskId);
    }
    if (!stuckOn) return;
    agent.stuckSince ??= Date.now();
    // A cluster autoscaler needs minutes to add a node; a pull or config error does not heal by waiting.
    const grace = stuckOn === 'unschedulable' ? this.graces.pendingSeconds : this.graces.startSeconds;
    const left = agent.stuckSince + grace * 1000 - Date.now();
    if (left > 0) {
      if (!this.graceDue.has(taskId)) this.graceDue.set(taskId, left);
    } else if (problem) {
      if (!agent.givingUp) void this.failToStart(taskId, agent, problem, pod);
      agent.givingUp = true;
    } else if (!agent.givingUp && !agent.checkingCreation && !this.graceDue.has(taskId)) {
      void this.checkPodCreation(taskId, agent);
    }
  }

  /** The grace is over and the Job has no pod: fail with the cluster's reason, or look again later. */
  private async checkPodCreation(taskId: string, agent: TrackedAgent): Promise<void> {
    agent.checkingCreation = true;
    const problem = await this.hooks.podCreationProblem(taskId, agent).catch(() => undefined);
    agent.checkingCreation = false;
    if (this.closed || agent.final || agent.givingUp || this.agents.get(taskId) !== agent || agent.stuckOn !== 'pod creation') return;
    if (problem) {
      agent.givingUp = true;
      await this.failToStart(taskId, agent, problem, undefined);
      return;
    }
    this.graceDue.set(taskId, Math.max(1000, Math.min(CREATION_RECHECK_MS, this.graces.startSeconds * 1000)));
  }

  /** Reports the start failure with the runtime's reason and message, then lets the backend clean up. */
  private async failToStart(taskId: string, agent: TrackedAgent, problem: StartProblem, pod: V1Pod | undefined): Promise<void> {
    const message = await this.hooks.describe(agent, problem, pod).catch(() => problem.message);
    const state: AgentState = { phase: 'failed_to_start', reason: problem.reason, message };
    agent.final = state;
    this.report(taskId, agent, state);
    await this.hooks.abandon(taskId, agent, problem);
  }

  private report(taskId: string, agent: TrackedAgent, state: AgentState): void {
    if (sameState(agent.reported, state)) return;
    agent.reported = state;
    for (const listener of this.listeners) {
      try {
        listener(taskId, state);
      } catch (error) {
        this.logger.error(`A state listener failed for task ${taskId}: ${String(error)}`);
      }
    }
  }
}

/**
 * Only a pod the task's Job controls (its controller owner reference carries the Job's uid)
 * speaks for the agent: a pod someone else labelled with the task id does not. Before the
 * Job is known, a pod with a Job controller is taken in; its Job's uid is checked once known.
 */
export function madeBy(pod: V1Pod, job: V1Job | undefined): boolean {
  const controller = controllerOf(pod);
  if (!controller || controller.kind !== 'Job') return false;
  return !job?.metadata?.uid || controller.uid === job.metadata.uid;
}

function controllerOf(pod: V1Pod) {
  return pod.metadata?.ownerReferences?.find((owner) => owner.controller);
}

/** Oldest first (a Job's retries make newer pods). */
export function byCreation(a: V1Pod, b: V1Pod): number {
  const time = (pod: V1Pod) => (pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : 0);
  return time(a) - time(b);
}
