import { randomBytes } from 'node:crypto';
import { KubeObject, KubeStore, Resource } from './kube-store';

type Json = Record<string, unknown>;
export type Propagation = 'Background' | 'Foreground' | 'Orphan';

export interface PodExit {
  exitCode: number;
  /** Container termination reason; default `Completed` for 0 and `Error` otherwise. */
  reason?: string;
  message?: string;
}

const now = () => new Date().toISOString();

/**
 * What kube-controller-manager and the kubelet would do for Jobs, driven by the test:
 * the Job controller makes a Pod per Job, the test moves the Pod through its phases
 * (image pull errors, unschedulable, running, exit codes, OOM), and the Job's status and
 * conditions follow as they do in a real cluster. `refusePods` makes admission refuse a
 * namespace's pods, so Jobs get FailedCreate events instead of a Pod. Deleting a Job garbage-collects its
 * dependents per propagationPolicy; a finished Job is removed after its TTL.
 */
export class JobSimulator {
  private readonly logs = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Namespaces whose pods admission refuses, with the reason after `is forbidden: `. */
  private readonly refusals = new Map<string, string>();
  /** Pods the Job controller has yet to create, by `namespace/job`. */
  private readonly pendingPods = new Map<string, () => void>();
  /** Admission checks on pods (Pod Security), by namespace: a refusal reason, or undefined to admit. */
  readonly podAdmission = new Map<string, (pod: Json) => string | undefined>();

  /**
   * How long a deleted pod stays Terminating: an agent that traps SIGTERM keeps running
   * until its grace period ends (the kubelet's SIGKILL). Tests shorten the real 10 s.
   */
  terminationGraceMs = 300;

  /** Pods run as soon as they are made, with nothing for the test to drive (benchmarks at scale). */
  runPods = false;

  constructor(private readonly store: KubeStore, private readonly podRetryMs = 300, private readonly podCreateDelayMs = 50) {}

  /** As kube-controller-manager does, the Job's pod comes after the Job, in a later sync; a suspended Job gets none. */
  jobCreated(job: KubeObject): void {
    const suspended = (job.spec as Json).suspend === true;
    this.store.update('jobs', job.metadata.namespace, job.metadata.name, (j) => {
      j.status = suspended
        ? { active: 0, ready: 0, conditions: [condition('Suspended', 'True', 'JobSuspended', 'Job suspended')] }
        : { active: 0, ready: 0, startTime: now(), uncountedTerminatedPods: {} };
    });
    if (!suspended) this.schedulePod(job);
  }

  /**
   * What the Job controller does when `spec.suspend` flips: suspending deletes the Job's
   * active pods (gracefully: they terminate under whatever policy still selects them);
   * resuming starts the clock again and makes the pod.
   */
  jobUpdated(before: KubeObject, after: KubeObject): void {
    const was = (before.spec as Json).suspend === true;
    const is = (after.spec as Json).suspend === true;
    if (was === is) return;
    const { namespace, name } = after.metadata;
    if (is) {
      this.pendingPods.delete(`${namespace}/${name}`);
      for (const pod of this.store.list('pods', { namespace, labelSelector: `job-name=${name}` })) this.deletePod(namespace, pod.metadata.name);
      this.patchJobStatus(namespace, name, (s) => Object.assign(s, { active: 0, ready: 0, conditions: [condition('Suspended', 'True', 'JobSuspended', 'Job suspended')] }));
      return;
    }
    this.patchJobStatus(namespace, name, (s) => Object.assign(s, { startTime: now(), conditions: [condition('Suspended', 'False', 'JobResumed', 'Job resumed')] }));
    this.schedulePod(after);
  }

  /**
   * A graceful pod deletion, as the kubelet carries it out: `deletionTimestamp` at once, the
   * container still running (an agent may trap SIGTERM) until the grace period ends, then
   * the container killed and the pod object removed.
   */
  deletePod(namespace: string, name: string): KubeObject | undefined {
    const pod = this.store.get('pods', namespace, name);
    if (!pod || pod.metadata.deletionTimestamp) return pod;
    const marked = this.store.update('pods', namespace, name, (p) => {
      p.metadata.deletionTimestamp = now();
    });
    this.later(this.terminationGraceMs, () => {
      const current = this.store.get('pods', namespace, name);
      if (current?.metadata.uid !== pod.metadata.uid) return;
      if (!isTerminated(current)) this.terminate(current, 137, 'Error');
      this.store.remove('pods', namespace, name);
    });
    return marked;
  }

  private schedulePod(job: KubeObject): void {
    const key = `${job.metadata.namespace}/${job.metadata.name}`;
    const create = () => {
      this.pendingPods.delete(key);
      const current = this.store.get('jobs', job.metadata.namespace, job.metadata.name);
      if (current?.metadata.uid === job.metadata.uid) this.createPod(current);
    };
    this.pendingPods.set(key, create);
    this.later(this.podCreateDelayMs, () => this.pendingPods.get(key) === create && create());
  }

  /**
   * From now on the pods of `namespace` are refused at admission, as a ResourceQuota, a
   * LimitRange or a missing ServiceAccount does (`forbidden` is what follows
   * `pods "<name>" is forbidden: `): the Job controller makes no Pod, records a Warning
   * FailedCreate event on the Job for every attempt and keeps retrying.
   */
  refusePods(namespace: string, forbidden: string): void {
    this.refusals.set(namespace, forbidden);
  }

  /** Lifts the refusal: the Job controller's next sync creates the missing pods now. */
  allowPods(namespace: string): void {
    this.refusals.delete(namespace);
    for (const job of this.store.list('jobs', { namespace })) {
      const finished = ((job.status as { conditions?: Json[] } | undefined)?.conditions ?? []).some((c) => c.status === 'True');
      if (!finished && !this.pod(namespace, job.metadata.name)) this.createPod(job);
    }
  }

  /** The Job's newest Pod, which the test drives (a pod the Job controller is about to create is created first). */
  pod(namespace: string, jobName: string): KubeObject | undefined {
    this.pendingPods.get(`${namespace}/${jobName}`)?.();
    return this.store.list('pods', { namespace, labelSelector: `job-name=${jobName}` }).at(-1);
  }

  setWaiting(namespace: string, jobName: string, reason: string, message: string): void {
    const pod = this.requirePod(namespace, jobName);
    this.updatePod(pod, (status, container) => {
      status.phase = 'Pending';
      status.conditions = [condition('PodScheduled', 'True'), condition('Ready', 'False', 'ContainersNotReady')];
      container.ready = false;
      container.state = { waiting: { reason, message } };
    });
    this.event(pod, 'Warning', 'Failed', `Error: ${reason}: ${message}`);
  }

  /**
   * The kubelet's image pull failing again and again: the container's waiting reason goes
   * ErrImagePull, ImagePullBackOff, ErrImagePull, ... every `everyMs` while the pod is still
   * waiting on it.
   */
  failPulls(namespace: string, jobName: string, message: string, everyMs = 150): void {
    const podName = this.requirePod(namespace, jobName).metadata.name;
    const step = (reason: string) => {
      const pod = this.store.get('pods', namespace, podName);
      const waiting = (pod?.status as { containerStatuses?: { state?: { waiting?: { reason?: string } } }[] } | undefined)?.containerStatuses?.[0]?.state?.waiting;
      if (!pod || !waiting) return;
      this.setWaiting(namespace, jobName, reason, reason === 'ErrImagePull' ? message : `Back-off pulling image: ${message}`);
      this.later(everyMs, () => step(reason === 'ErrImagePull' ? 'ImagePullBackOff' : 'ErrImagePull'));
    };
    step('ErrImagePull');
  }

  setUnschedulable(namespace: string, jobName: string, message: string): void {
    const pod = this.requirePod(namespace, jobName);
    this.updatePod(pod, (status) => {
      status.phase = 'Pending';
      status.conditions = [condition('PodScheduled', 'False', 'Unschedulable', message)];
      delete status.containerStatuses;
    });
    this.event(pod, 'Warning', 'FailedScheduling', message);
  }

  run(namespace: string, jobName: string): void {
    const pod = this.requirePod(namespace, jobName);
    this.updatePod(pod, (status, container) => {
      status.phase = 'Running';
      status.podIP = '10.0.0.17';
      status.conditions = [condition('PodScheduled', 'True'), condition('Ready', 'True')];
      Object.assign(container, { ready: true, started: true, state: { running: { startedAt: now() } } });
    });
    this.event(pod, 'Normal', 'Started', 'Started container agent');
    this.patchJobStatus(namespace, jobName, (s) => Object.assign(s, { active: 1, ready: 1 }));
  }

  finish(namespace: string, jobName: string, exit: PodExit): void {
    const pod = this.requirePod(namespace, jobName);
    const reason = exit.reason ?? (exit.exitCode === 0 ? 'Completed' : 'Error');
    this.updatePod(pod, (status, container) => {
      status.phase = exit.exitCode === 0 ? 'Succeeded' : 'Failed';
      status.conditions = [condition('PodScheduled', 'True'), condition('Ready', 'False', 'PodCompleted')];
      const terminated = { exitCode: exit.exitCode, reason, message: exit.message, startedAt: now(), finishedAt: now() };
      Object.assign(container, { ready: false, started: false, state: { terminated } });
    });
    const job = this.store.get('jobs', namespace, jobName);
    if (!job) return;
    if (exit.exitCode === 0) {
      this.complete(job);
      return;
    }
    const rule = failJobRule(job, exit.exitCode);
    if (rule !== undefined) {
      const message = `Container agent for pod ${namespace}/${pod.metadata.name} failed with exit code ${exit.exitCode} matching FailJob rule at index ${rule}`;
      this.patchJobStatus(namespace, jobName, (s) => Object.assign(s, { conditions: [condition('FailureTarget', 'True', 'PodFailurePolicy', message)] }));
      this.later(50, () => this.fail(job, 'PodFailurePolicy', message, Number((job.status as Json).failed ?? 0) + 1));
      return;
    }
    this.countFailure(job);
  }

  /**
   * A pod evicted (the Eviction API, a node drain, preemption): `DisruptionTarget` on the
   * pod, Terminating with SIGTERM's 143 for `terminatingMs`, then gone. A Job whose
   * podFailurePolicy ignores DisruptionTarget makes a new pod without counting a failure;
   * any other counts it against backoffLimit.
   */
  evict(namespace: string, jobName: string, terminatingMs = 200): void {
    const pod = this.requirePod(namespace, jobName);
    this.store.update('pods', namespace, pod.metadata.name, (p) => {
      const status = p.status as Json;
      status.conditions = [...((status.conditions as Json[] | undefined) ?? []), condition('DisruptionTarget', 'True', 'EvictionByEvictionAPI', 'Eviction API: evicting')];
    });
    this.terminate(this.store.get('pods', namespace, pod.metadata.name)!, 143, 'Error');
    this.later(terminatingMs, () => {
      this.store.remove('pods', namespace, pod.metadata.name);
      const job = this.store.get('jobs', namespace, jobName);
      // A suspended Job makes no pod, as the real Job controller does.
      if (!job || (job.spec as Json).suspend === true) return;
      if (ignoresDisruption(job)) this.createPod(job);
      else this.countFailure(job);
    });
  }

  private countFailure(job: KubeObject): void {
    const { namespace, name: jobName } = job.metadata;
    const failed = Number((job.status as Json).failed ?? 0) + 1;
    const backoffLimit = Number(((job.spec as Json).backoffLimit as number | undefined) ?? 6);
    if (failed <= backoffLimit) {
      this.patchJobStatus(namespace, jobName, (s) => Object.assign(s, { failed, active: 0, ready: 0 }));
      this.createPod(job);
      return;
    }
    this.fail(job, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', failed);
  }

  /**
   * What the Job controller does when activeDeadlineSeconds passes (Kubernetes 1.31+):
   * `FailureTarget` at once, the pods Terminating (SIGTERM: exit code 143) for
   * `terminatingMs`, then the pods gone and `Failed`.
   */
  exceedDeadline(namespace: string, jobName: string, terminatingMs = 300): void {
    const job = this.store.get('jobs', namespace, jobName);
    if (!job) throw new Error(`no Job ${namespace}/${jobName}`);
    const message = 'Job was active longer than specified deadline';
    this.patchJobStatus(namespace, jobName, (s) => Object.assign(s, { conditions: [condition('FailureTarget', 'True', 'DeadlineExceeded', message)] }));
    const pods = this.store.list('pods', { namespace, labelSelector: `job-name=${jobName}` });
    for (const pod of pods) this.terminate(pod, 143, 'Error');
    this.later(terminatingMs, () => {
      for (const pod of pods) this.store.remove('pods', namespace, pod.metadata.name);
      this.fail(job, 'DeadlineExceeded', message, 1);
    });
  }

  /** A pod being deleted: `deletionTimestamp` set, its container ended with `exitCode`. */
  private terminate(pod: KubeObject, exitCode: number, reason: string): void {
    this.store.update('pods', pod.metadata.namespace, pod.metadata.name, (p) => {
      p.metadata.deletionTimestamp = now();
    });
    this.updatePod(pod, (status, container) => {
      status.phase = 'Failed';
      Object.assign(container, { ready: false, started: false, state: { terminated: { exitCode, reason, startedAt: now(), finishedAt: now() } } });
    });
  }

  setLogs(namespace: string, jobName: string, text: string): void {
    const pod = this.requirePod(namespace, jobName);
    this.logs.set(`${namespace}/${pod.metadata.name}`, text);
  }

  logsOf(namespace: string, podName: string): string {
    return this.logs.get(`${namespace}/${podName}`) ?? '';
  }

  /**
   * Deletes a Job and garbage-collects its dependents (Pods, Secrets, NetworkPolicies) per the
   * propagation policy, in the garbage collector's order: with Background the owner goes
   * first, then the collector deletes every dependent at once; a pod is deleted gracefully
   * and stays Terminating for its grace period, while a Secret or a NetworkPolicy is gone at
   * once. (Foreground waits only for dependents with blockOwnerDeletion before the owner.)
   */
  deleteJob(namespace: string, name: string, propagation: Propagation): KubeObject | undefined {
    const job = this.store.get('jobs', namespace, name);
    if (!job) return undefined;
    if (propagation === 'Orphan') {
      for (const [resource, dependent] of this.dependents(job.metadata.uid)) {
        this.store.update(resource, namespace, dependent.metadata.name, (d) => {
          d.metadata.ownerReferences = d.metadata.ownerReferences?.filter((o) => o.uid !== job.metadata.uid);
        });
      }
      return this.store.remove('jobs', namespace, name);
    }
    if (propagation === 'Foreground') this.collect(job.metadata.uid);
    const removed = this.store.remove('jobs', namespace, name);
    // The garbage collector works asynchronously: dependents go shortly after the owner.
    if (propagation === 'Background') this.later(0, () => this.collect(job.metadata.uid));
    return removed;
  }

  /** An object created with an owner that does not exist is collected, as the real GC does. */
  checkOwners(resource: Resource, object: KubeObject): void {
    const owners = object.metadata.ownerReferences ?? [];
    const orphaned = owners.some((o) => !this.store.list('jobs').some((j) => j.metadata.uid === o.uid));
    if (owners.length > 0 && orphaned) {
      this.later(0, () => this.store.remove(resource, object.metadata.namespace, object.metadata.name));
    }
  }

  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private complete(job: KubeObject): void {
    const message = 'Reached expected number of succeeded pods';
    this.patchJobStatus(job.metadata.namespace, job.metadata.name, (s) => Object.assign(s, {
      active: 0, ready: 0, succeeded: 1, completionTime: now(),
      conditions: [condition('SuccessCriteriaMet', 'True', 'CompletionsReached', message), condition('Complete', 'True', 'CompletionsReached', message)],
    }));
    this.event(job, 'Normal', 'Completed', 'Job completed');
    this.scheduleTtl(job);
  }

  private fail(job: KubeObject, reason: string, message: string, failed: number): void {
    this.patchJobStatus(job.metadata.namespace, job.metadata.name, (s) => Object.assign(s, {
      active: 0, ready: 0, failed,
      conditions: [condition('FailureTarget', 'True', reason, message), condition('Failed', 'True', reason, message)],
    }));
    this.event(job, 'Warning', reason, message);
    this.scheduleTtl(job);
  }

  private scheduleTtl(job: KubeObject): void {
    const ttl = (job.spec as Json).ttlSecondsAfterFinished;
    if (typeof ttl !== 'number') return;
    this.later(ttl * 1000, () => this.deleteJob(job.metadata.namespace, job.metadata.name, 'Background'));
  }

  private createPod(job: KubeObject): void {
    const admission = this.podAdmission.get(job.metadata.namespace);
    const forbidden = this.refusals.get(job.metadata.namespace) ?? admission?.(((job.spec as Json).template as Json).spec as Json);
    if (forbidden !== undefined) return this.refusePod(job, forbidden);
    const template = (job.spec as Json).template as { metadata?: { labels?: Record<string, string> }; spec: Json };
    // The RuntimeClass admission plugin refuses a pod naming a class the cluster lacks.
    const runtimeClass = template.spec.runtimeClassName as string | undefined;
    if (runtimeClass && !this.store.get('runtimeclasses', '', runtimeClass)) return this.refusePod(job, `pod rejected: RuntimeClass "${runtimeClass}" not found`);
    const container = (template.spec.containers as Json[])[0];
    const pod = this.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${job.metadata.name}-`,
        namespace: job.metadata.namespace,
        labels: {
          ...(template.metadata?.labels ?? {}),
          'job-name': job.metadata.name,
          'batch.kubernetes.io/job-name': job.metadata.name,
          'controller-uid': job.metadata.uid,
          'batch.kubernetes.io/controller-uid': job.metadata.uid,
        },
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata.name, uid: job.metadata.uid, controller: true }],
      },
      spec: structuredClone(template.spec),
      status: {
        phase: 'Pending',
        qosClass: 'Guaranteed',
        containerStatuses: [{ name: container.name, image: container.image, imageID: '', ready: false, restartCount: 0, started: false, state: { waiting: this.containerWaiting(job.metadata.namespace, container) } }],
      },
    });
    this.event(job, 'Normal', 'SuccessfulCreate', `Created pod: ${pod.metadata.name}`);
    this.patchJobStatus(job.metadata.namespace, job.metadata.name, (s) => Object.assign(s, { active: 1 }));
    if (this.runPods && !isWaitingOnConfig(pod)) this.run(job.metadata.namespace, job.metadata.name);
  }

  /** The kubelet cannot make a container whose env names a Secret that does not exist (yet). */
  private containerWaiting(namespace: string, container: Json): Json {
    const refs = ((container.env as { valueFrom?: { secretKeyRef?: { name: string } } }[] | undefined) ?? []).map((e) => e.valueFrom?.secretKeyRef?.name).filter(Boolean) as string[];
    const missing = refs.find((name) => !this.store.get('secrets', namespace, name));
    return missing ? { reason: 'CreateContainerConfigError', message: `secret "${missing}" not found` } : { reason: 'ContainerCreating' };
  }

  /** What the Job controller records when the API server refuses its pod, and its retry. */
  private refusePod(job: KubeObject, forbidden: string): void {
    const podName = `${job.metadata.name}-${randomBytes(3).toString('hex').slice(0, 5)}`;
    this.event(job, 'Warning', 'FailedCreate', `Error creating: pods "${podName}" is forbidden: ${forbidden}`);
    this.later(this.podRetryMs, () => {
      const current = this.store.get('jobs', job.metadata.namespace, job.metadata.name);
      if (current?.metadata.uid === job.metadata.uid && !this.pod(job.metadata.namespace, job.metadata.name)) this.createPod(current);
    });
  }

  private updatePod(pod: KubeObject, change: (status: Json, container: Json) => void): void {
    this.store.update('pods', pod.metadata.namespace, pod.metadata.name, (p) => {
      const status = p.status as Json;
      const spec = (p.spec as { containers: Json[] }).containers[0];
      const containers = (status.containerStatuses as Json[] | undefined) ?? [{ name: spec.name, image: spec.image, imageID: '', restartCount: 0 }];
      status.containerStatuses = containers;
      change(status, containers[0]);
    });
  }

  private patchJobStatus(namespace: string, name: string, change: (status: Json) => void): void {
    this.store.update('jobs', namespace, name, (job) => {
      job.status = (job.status as Json | undefined) ?? {};
      change(job.status as Json);
    });
  }

  private requirePod(namespace: string, jobName: string): KubeObject {
    const pod = this.pod(namespace, jobName);
    if (!pod) throw new Error(`Job ${namespace}/${jobName} has no pod`);
    return pod;
  }

  private dependents(uid: string): [Resource, KubeObject][] {
    return (['pods', 'secrets', 'networkpolicies'] as Resource[]).flatMap((resource) =>
      this.store.list(resource).filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === uid)).map((o): [Resource, KubeObject] => [resource, o]),
    );
  }

  private collect(uid: string): void {
    for (const [resource, dependent] of this.dependents(uid)) {
      if (resource === 'pods') this.deletePod(dependent.metadata.namespace, dependent.metadata.name);
      else this.store.remove(resource, dependent.metadata.namespace, dependent.metadata.name);
    }
  }

  private event(object: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { name, namespace, uid } = object.metadata;
    this.store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, namespace, uid },
      type, reason, message, count: 1,
      firstTimestamp: now(), lastTimestamp: now(),
      source: { component: object.kind === 'Job' ? 'job-controller' : 'kubelet' },
    });
  }

  private later(ms: number, action: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      action();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }
}

type PodFailureRule = { action: string; onExitCodes?: { operator: 'In' | 'NotIn'; values: number[] }; onPodConditions?: { type: string; status?: string }[] };

function rulesOf(job: KubeObject): PodFailureRule[] {
  return (((job.spec as Json).podFailurePolicy as { rules?: PodFailureRule[] } | undefined)?.rules) ?? [];
}

/** The index of the first podFailurePolicy rule that fails the Job for this exit code, if it is a FailJob rule. */
function failJobRule(job: KubeObject, exitCode: number): number | undefined {
  const index = rulesOf(job).findIndex((rule) => rule.onExitCodes && (rule.onExitCodes.operator === 'In') === rule.onExitCodes.values.includes(exitCode));
  return index >= 0 && rulesOf(job)[index].action === 'FailJob' ? index : undefined;
}

function ignoresDisruption(job: KubeObject): boolean {
  return rulesOf(job).some((rule) => rule.action === 'Ignore' && rule.onPodConditions?.some((c) => c.type === 'DisruptionTarget'));
}

function isTerminated(pod: KubeObject): boolean {
  const statuses = ((pod.status as Json | undefined)?.containerStatuses as { state?: { terminated?: unknown } }[] | undefined) ?? [];
  return statuses.some((status) => status.state?.terminated !== undefined);
}

function condition(type: string, status: 'True' | 'False', reason?: string, message?: string): Json {
  return { type, status, reason, message, lastProbeTime: null, lastTransitionTime: now() };
}

/** A container the kubelet cannot make yet (its Secret is missing): it does not run until that changes. */
function isWaitingOnConfig(pod: KubeObject): boolean {
  const statuses = (pod.status as { containerStatuses?: { state?: { waiting?: { reason?: string } } }[] }).containerStatuses ?? [];
  return statuses[0]?.state?.waiting?.reason === 'CreateContainerConfigError';
}
