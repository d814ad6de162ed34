import { Logger } from '@nestjs/common';
import type { CoreV1Event, KubeConfig, V1Job, V1Pod } from '@kubernetes/client-node';
import { AppConfig } from '../../shared/config/config';
import { describeApiError, DEFAULT_RETRY, isConflict, isNotFound, isTransient, KubeApi, loadKubeConfig, RetryPolicy, statusCode, TokenBucket } from './kubernetes-client';
import { buildJob, buildSecret, EGRESS_POLICY_ANNOTATION, jobName, ManifestSettings, managedSelector, STOP_GRACE_SECONDS, TASK_ID_LABEL } from './kubernetes-manifests';
import { PodAdditionRules } from '../../shared/config/kubernetes-settings';
import { JobShaping } from './kubernetes-job-shaping';
import { podAdditionProblems } from './kubernetes-pod-additions';
import { AgentSecrets } from './kubernetes-secrets';
import { EgressKeeper } from './kubernetes-egress-keeper';
import { buildNetworkPolicy, createNetworkPolicy, DispatcherEndpoint, DnsEndpoint, EgressSettings, jobOwner, KUBE_DNS } from './kubernetes-network-policy';
import { EVICTION_LIMIT_REASON, recordDisruptionsPatch } from './kubernetes-evictions';
import { createdByUs, CREATOR_ANNOTATION, creatorMark } from './kubernetes-job-creator';
import { AgentTracker, byCreation, StartProblem, TrackedAgent } from './kubernetes-tracker';
import { ResourceWatch } from './kubernetes-watch';
import { DEFAULT_API_TIMEOUT_SECONDS } from './kubernetes-call-deadline';
import { followPodLog } from './kubernetes-log-follow';
import { slimJob, slimPod } from './kubernetes-slim';
import { readyWarmPod } from './kubernetes-warm-claim';
import { AgentSpec, AgentState, AgentStateListener, hasEnded, LogFollow, ManagedAgent, RuntimeBackend, RuntimeUnavailableError } from './runtime';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NO_ADDITIONS: PodAdditionRules = { labelPrefixes: [], annotationPrefixes: [], nodeSelectorKeys: [], tolerationKeys: [], priorityClasses: [] };

export interface KubernetesRuntimeOptions {
  namespace: string;
  /** Namespaces a task may name (KUBE_NAMESPACES); default: `namespace` alone. */
  allowedNamespaces?: string[];
  dispatcherName: string;
  ttlSecondsAfterFinished: number;
  startGraceSeconds: number;
  /** How long an unschedulable pod may wait for a node (default: startGraceSeconds). */
  pendingGraceSeconds?: number;
  /** KUBE_API_QPS and KUBE_API_BURST: the client-side token bucket every API call goes through. */
  qps: number;
  burst?: number;
  /** KUBE_API_TIMEOUT_SECONDS: an API request (not a watch or log follow) unanswered this long is aborted (default 30 s). */
  apiTimeoutSeconds?: number;
  /** What a task may add to its pod (KUBE_TASK_*); default: nothing. */
  taskAdditions?: PodAdditionRules;
  /** Disruption policy and pod template applied to every Job (kubernetes-job-shaping.ts). */
  shaping?: JobShaping;
  /** Ephemeral-storage limit and emptyDir sizeLimit of every agent pod (AGENT_EPHEMERAL_STORAGE_LIMIT, AGENT_EMPTYDIR_SIZE_LIMIT). */
  storage?: ManifestSettings['storage'];
  /** Given by tests (loadFromOptions); otherwise loaded per `loadKubeConfig`. */
  kubeConfig?: KubeConfig;
  kubeconfigPath?: string | null;
  retry?: RetryPolicy;
  watchRetryDelayMs?: number;
  /** Server-side length of one watch request before it is resumed (default 300 s). */
  watchTimeoutSeconds?: number;
  /** The key of the mark on every Job this dispatcher creates (AGENT_KEY, else API_KEY; kubernetes-job-creator.ts). */
  creatorKey?: string;
  /** AGENT_MAX_EVICTION_REPLACEMENTS: disrupted pods a task's Job may replace before the task fails; default: no limit. */
  maxEvictionReplacements?: number;
  /** What `dispatcher` egress lets agents reach; default: nothing beyond DNS. */
  dispatcher?: DispatcherEndpoint;
  /** A watch silent (no event, no bookmark) this long is restarted (default 90 s). */
  watchSilenceSeconds?: number;
  /** The cluster DNS agents may reach (AGENT_DNS_PEERS, AGENT_DNS_PORTS); default kube-dns by label. */
  dns?: DnsEndpoint;
  /** AGENT_EGRESS_DENY_CIDRS: ranges `open` egress never reaches, beyond the built-in ones. */
  egressDenyCidrs?: string[];
  /** How often missing egress policies are put back (default 30 s). */
  policyReconcileMs?: number;
  /** How often a stop looks whether the suspended Job's pods have ended (default 500 ms). */
  stopPollMs?: number;
  /** How long a stop waits for them before it deletes the Job anyway (default: the stop grace plus 30 s). */
  stopWaitMs?: number;
}

/**
 * The `kubernetes` backend: one batch/v1 Job per task (see kubernetes-manifests.ts),
 * watched together with its Pods in each namespace in use. A pod that cannot start
 * (image pull, config error, unschedulable) for START_GRACE_SECONDS, or a Job whose pod
 * the cluster refuses to create (FailedCreate: quota, LimitRange, missing ServiceAccount)
 * for as long, is reported as failed_to_start and its Job deleted; stops delete a running Job with background
 * propagation (its Pod and Secret follow), while a finished Job is left to
 * ttlSecondsAfterFinished so its pod log stays readable.
 */
export class KubernetesRuntime implements RuntimeBackend {
  readonly name = 'kubernetes' as const;
  readonly hostLocal = false;
  readonly reportsChanges = true;
  private readonly logger = new Logger(KubernetesRuntime.name);
  private readonly api: KubeApi;
  private readonly watches = new Map<string, ResourceWatch<V1Job | V1Pod>[]>();
  private readonly agents: AgentTracker;
  private readonly settings: ManifestSettings;
  private readonly egress: EgressSettings;
  private readonly secrets: AgentSecrets;
  private readonly keeper: EgressKeeper;
  /** Refs of Jobs that carry a task's name and labels but not this dispatcher's mark: never stopped or deleted. */
  private readonly foreign = new Set<string>();

  constructor(private readonly options: KubernetesRuntimeOptions) {
    const kubeConfig = options.kubeConfig ?? loadKubeConfig(options.kubeconfigPath ?? null);
    const timeoutMs = (options.apiTimeoutSeconds ?? DEFAULT_API_TIMEOUT_SECONDS) * 1000;
    this.api = new KubeApi(kubeConfig, new TokenBucket(options.qps, options.burst ?? options.qps * 2), options.retry ?? DEFAULT_RETRY, timeoutMs);
    this.secrets = new AgentSecrets(this.api);
    this.settings = { namespace: options.namespace, dispatcherName: options.dispatcherName, ttlSecondsAfterFinished: options.ttlSecondsAfterFinished, shaping: options.shaping, storage: options.storage };
    this.egress = {
      dispatcher: options.dispatcher ?? { podLabels: {}, namespace: options.namespace, port: 8080, url: 'http://dispatcher.invalid' },
      dns: options.dns ?? KUBE_DNS,
      denyCidrs: options.egressDenyCidrs ?? [],
    };
    this.agents = new AgentTracker({ startSeconds: options.startGraceSeconds, pendingSeconds: options.pendingGraceSeconds ?? options.startGraceSeconds }, {
      describe: (agent, problem, pod) => this.withWarningEvent(agent.namespace, pod, problem.message),
      podCreationProblem: (taskId, agent) => this.podCreationProblem(taskId, agent),
      abandon: (taskId, agent, problem) => this.abandon(taskId, agent, problem),
      recordDisruptions: (taskId, agent, uids) => this.recordDisruptions(taskId, agent, uids),
      stopOverEvicted: (taskId, agent) => this.stopOverEvicted(taskId, agent),
    }, options.maxEvictionReplacements ?? null);
    this.keeper = new EgressKeeper(this.api, this.settings, {
      namespaces: () => [...this.watches.keys()],
      jobs: (namespace) => this.agents.liveJobs(namespace),
      job: (taskId) => {
        const job = this.agents.get(taskId)?.job;
        return job && !job.metadata?.deletionTimestamp ? job : undefined;
      },
    }, options.policyReconcileMs ?? 30_000, { retryDelayMs: options.watchRetryDelayMs, timeoutSeconds: options.watchTimeoutSeconds, silenceSeconds: options.watchSilenceSeconds });
  }

  static fromConfig(config: AppConfig): KubernetesRuntime {
    return new KubernetesRuntime({
      namespace: config.kubeNamespace,
      allowedNamespaces: config.kubernetes.namespaces,
      dispatcherName: config.dispatcherName,
      ttlSecondsAfterFinished: config.jobTtlSecondsAfterFinished,
      startGraceSeconds: config.startGraceSeconds,
      pendingGraceSeconds: config.kubernetes.pendingGraceSeconds,
      watchSilenceSeconds: config.kubernetes.watchSilenceSeconds,
      taskAdditions: config.kubernetes.taskAdditions,
      shaping: { doNotDisrupt: config.kubernetes.doNotDisrupt, backoffLimit: config.kubernetes.jobBackoffLimit, podTemplate: config.kubernetes.podTemplate },
      qps: config.kubeApiQps,
      burst: config.kubeApiBurst,
      apiTimeoutSeconds: config.kubernetes.apiTimeoutSeconds,
      kubeconfigPath: config.kubeconfig,
      storage: { ephemeral: config.agentFloor.ephemeralStorage, emptyDirSizeLimit: config.agentFloor.emptyDirSizeLimit },
      dispatcher: {
        podLabels: config.agentIsolation.dispatcherPodLabels,
        namespace: config.agentIsolation.dispatcherNamespace || config.kubeNamespace,
        port: config.agentPort ?? config.dispatcherPort,
        url: config.agentDispatcherUrl,
      },
      dns: config.agentIsolation.dns,
      egressDenyCidrs: config.agentIsolation.egressDenyCidrs,
      maxEvictionReplacements: config.agentFloor.maxEvictionReplacements,
      creatorKey: config.agentKey || config.apiKey,
    });
  }

  validate(spec: Pick<AgentSpec, 'image' | 'namespace' | 'pod'>): Record<string, string[]> {
    const problems: Record<string, string[]> = spec.pod ? podAdditionProblems(spec.pod, this.options.taskAdditions ?? NO_ADDITIONS) : {};
    const allowed = this.options.allowedNamespaces ?? [this.options.namespace];
    if (spec.namespace && (!DNS_LABEL.test(spec.namespace) || spec.namespace.length > 63)) {
      problems['runtime_target.namespace'] = ['must be a Kubernetes namespace name (a DNS-1123 label)'];
    } else if (spec.namespace && !allowed.includes(spec.namespace)) {
      // Without a Role there, the Job would be refused and its watch would retry 403s forever.
      problems['runtime_target.namespace'] = [`must be one of the namespaces this dispatcher may use (KUBE_NAMESPACES): ${allowed.join(', ')}`];
    }
    if (!spec.image.trim() || /\s/.test(spec.image)) problems.agent_image = ['must name a container image, without white space'];
    return problems;
  }

  /**
   * The Job is created suspended, carrying a copy of its egress policy; its Secret and its
   * policy are then created already owned by it, and only then is it resumed and its pod
   * made: the pod never waits for its key nor runs without its policy (and the namespace's
   * default-deny baseline is there before it), and the dispatcher never patches a Secret.
   */
  async submit(spec: AgentSpec): Promise<string> {
    try {
      return await this.submitOnce(spec);
    } catch (error) {
      const cause = error instanceof Error ? error.cause : undefined;
      if (isTransient(error) || isTransient(cause)) throw new RuntimeUnavailableError(`the Kubernetes API server is unavailable: ${describeApiError(cause ?? error)}`);
      throw error;
    }
  }

  private async submitOnce(spec: AgentSpec): Promise<string> {
    const namespace = spec.namespace || this.options.namespace;
    this.watchNamespace(namespace);
    this.agents.track(spec.taskId, namespace);
    await this.keeper.ensureBaseline(namespace);
    const policy = buildNetworkPolicy(spec, this.settings, this.egress);
    const body = buildJob(spec, this.settings);
    body.metadata!.annotations = { ...body.metadata!.annotations, [EGRESS_POLICY_ANNOTATION]: JSON.stringify(policy.spec), [CREATOR_ANNOTATION]: this.markOf(body) };
    const job = await this.createJob(namespace, body, spec.taskId);
    const ref = `${namespace}/${job.metadata!.name}`;
    try {
      const owner = jobOwner(job);
      await this.secrets.create(namespace, buildSecret(spec, this.settings, owner));
      const policy = buildNetworkPolicy(spec, this.settings, this.egress, owner);
      await createNetworkPolicy(this.api, namespace, policy);
      this.keeper.noteCreated(namespace, policy.metadata!.name!);
      if (job.spec?.suspend) await this.patchJob(ref, [{ op: 'replace', path: '/spec/suspend', value: false }], 'resume Job');
      return ref;
    } catch (error) {
      // Still suspended (no pod ever ran): deleting it takes its Secret and policy along.
      await this.deleteJob(ref, 'undo a Job whose Secret or NetworkPolicy could not be created').catch(() => undefined);
      throw error;
    }
  }

  /** A warm pool's pod takes a task: its policy, Secret and label are in place when this resolves. */
  async claimFor(agentKey: string, ref: string, spec: AgentSpec): Promise<void> {
    const { namespace, name } = parseRef(ref, this.options.namespace);
    const tracked = this.agents.get(agentKey);
    const watched = tracked?.job?.metadata?.name === name ? { job: tracked.job, pods: [...tracked.pods.values()] } : undefined;
    await readyWarmPod({ api: this.api, settings: this.settings, egress: this.egress, secrets: this.secrets }, namespace, name, agentKey, spec, watched);
  }

  /**
   * Suspends the Job, so the Job controller ends its pods under their policy (SIGTERM, then
   * SIGKILL after the grace), and waits for them to be gone; only then may `remove` delete
   * the Job, whose deletion takes the policy at once. A Job whose pods outlive the wait
   * (a lost node) is left to `remove`: the namespace's default-deny baseline still isolates
   * them. A finished Job holds no pod: nothing to do.
   */
  async stop(taskId: string, ref: string): Promise<void> {
    if (this.finished(taskId) || this.foreign.has(ref)) return;
    try {
      await this.patchJob(ref, [{ op: 'add', path: '/spec/suspend', value: true }], `suspend Job of task ${taskId}`);
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    const { namespace } = parseRef(ref, this.options.namespace);
    const until = Date.now() + (this.options.stopWaitMs ?? (STOP_GRACE_SECONDS + 30) * 1000);
    for (let poll = 0; Date.now() < until; poll += 1) {
      // The pod watch says when they are gone and a list confirms it (and, now and then, checks a watch that may lag).
      const ask = !this.agents.hasLivePods(taskId) || poll % 10 === 9;
      if (ask && (await this.podsOf(namespace, `${TASK_ID_LABEL}=${taskId}`)).length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, this.options.stopPollMs ?? 500));
    }
    this.logger.warn(`Task ${taskId}: its pods did not end within the stop wait; the default-deny policy keeps them isolated`);
  }

  async status(taskId: string, ref: string): Promise<AgentState> {
    const { namespace, name } = parseRef(ref, this.options.namespace);
    this.watchNamespace(namespace);
    const tracked = this.agents.get(taskId);
    if (tracked?.final) return tracked.final;
    if (tracked?.job) return this.agents.evaluate(taskId);
    try {
      const job = await this.api.call('read Job', () => this.api.batch.readNamespacedJob({ name, namespace }));
      if (!this.ours(job)) {
        this.foreign.add(ref);
        return { phase: 'gone', message: `Job ${name} was not created by this dispatcher; it is left alone` };
      }
      const pods = await this.podsOf(namespace, `${TASK_ID_LABEL}=${taskId}`);
      this.agents.absorb(taskId, namespace, job, pods);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return tracked?.reported && hasEnded(tracked.reported) ? tracked.reported : { phase: 'gone', message: `Job ${name} no longer exists` };
    }
    return this.agents.evaluate(taskId);
  }

  async logs(taskId: string, ref: string, tail?: number): Promise<string> {
    const { namespace } = parseRef(ref, this.options.namespace);
    const cached = this.agents.newestPod(taskId);
    const pod = cached ?? (await this.podsOf(namespace, `${TASK_ID_LABEL}=${taskId}`)).at(-1);
    if (!pod?.metadata?.name) return '';
    try {
      return await this.api.call('read pod log', () =>
        this.api.core.readNamespacedPodLog({ name: pod.metadata!.name!, namespace, container: 'agent', tailLines: tail }));
    } catch (error) {
      // 400: the container has not started; 404: the pod is gone. Either way there is no output.
      if ([400, 404].includes(statusCode(error) ?? 0)) return '';
      throw error;
    }
  }

  /** The newest pod's agent log as one follow stream; null while the task has no pod or its container waits to start. */
  async followLogs(taskId: string, ref: string, signal: AbortSignal): Promise<LogFollow | null> {
    const { namespace } = parseRef(ref, this.options.namespace);
    const pod = this.agents.newestPod(taskId) ?? (await this.podsOf(namespace, `${TASK_ID_LABEL}=${taskId}`)).at(-1);
    const podName = pod?.metadata?.name;
    if (!podName) return null;
    try {
      return { source: podName, chunks: await followPodLog(this.api.kubeConfig, namespace, podName, signal) };
    } catch (error) {
      // 400: the container has not started; 404: the pod is gone.
      if ([400, 404].includes(statusCode(error) ?? 0)) return null;
      throw error;
    }
  }

  /**
   * A finished Job is left to its ttlSecondsAfterFinished, so the agent's output can still
   * be read for that long (the tracker forgets it when the TTL controller deletes it);
   * any other is deleted now.
   */
  async remove(taskId: string, ref: string): Promise<void> {
    if (this.foreign.has(ref)) return;
    if (this.finished(taskId) && this.settings.ttlSecondsAfterFinished > 0) return;
    await this.deleteJob(ref, `remove task ${taskId}`);
    this.agents.forget(taskId);
  }

  async listManaged(): Promise<ManagedAgent[]> {
    this.watchNamespace(this.options.namespace);
    const agents: ManagedAgent[] = [];
    for (const namespace of this.watches.keys()) {
      const selector = managedSelector(this.settings);
      const jobs = await this.api.call('list Jobs', () => this.api.batch.listNamespacedJob({ namespace, labelSelector: selector }));
      const pods = await this.podsOf(namespace, selector);
      for (const job of jobs.items) {
        const taskId = job.metadata?.labels?.[TASK_ID_LABEL];
        if (!taskId) continue;
        if (!this.ours(job)) {
          this.logger.warn(`Job ${namespace}/${job.metadata?.name} carries this dispatcher's labels but not its mark (${CREATOR_ANNOTATION}); it is neither adopted nor deleted`);
          continue;
        }
        this.agents.absorb(taskId, namespace, job, pods.filter((pod) => pod.metadata?.labels?.[TASK_ID_LABEL] === taskId));
        agents.push({ taskId, ref: `${namespace}/${job.metadata!.name}`, state: this.agents.evaluate(taskId) });
      }
    }
    return agents;
  }

  onStateChange(listener: AgentStateListener): void {
    this.agents.onStateChange(listener);
    this.watchNamespace(this.options.namespace);
  }

  /** A cheap call that needs the dispatcher's own permissions: list one Job. */
  async ping(): Promise<void> {
    try {
      await this.api.call('ping', () => this.api.batch.listNamespacedJob({ namespace: this.options.namespace, limit: 1 }), { ...DEFAULT_RETRY, attempts: 1 });
    } catch (error) {
      // The API server's sentence, not client-node's dump of the response headers.
      throw new Error(describeApiError(error));
    }
  }

  async close(): Promise<void> {
    await this.keeper.close();
    for (const watches of this.watches.values()) for (const watch of watches) watch.stop();
    this.watches.clear();
    this.agents.close();
    this.api.close();
  }

  /** Resolves when the watches of `namespace` have their first list (for tests and recovery). */
  async synced(namespace = this.options.namespace): Promise<void> {
    this.watchNamespace(namespace);
    await Promise.all((this.watches.get(namespace) ?? []).map((watch) => watch.synced()));
  }

  private markOf(job: V1Job): string {
    const { namespace, name, labels } = job.metadata!;
    return creatorMark(this.options.creatorKey ?? '', this.options.dispatcherName, namespace!, name!, labels![TASK_ID_LABEL]);
  }

  private ours(job: V1Job): boolean {
    return createdByUs(job, this.options.creatorKey ?? '', this.options.dispatcherName);
  }

  /**
   * The agent ran and ended (exit or deadline), so its Job is finished and holds no pod.
   * A task ended for too many evictions is not: its Job has made a replacement pod.
   */
  private finished(taskId: string): boolean {
    const final = this.agents.get(taskId)?.final;
    if (final?.phase === 'exited' && final.reason === EVICTION_LIMIT_REASON) return false;
    return final?.phase === 'exited' || final?.phase === 'deadline_exceeded';
  }

  private async createJob(namespace: string, body: V1Job, taskId: string): Promise<V1Job> {
    try {
      return await this.api.call('create Job', () => this.api.batch.createNamespacedJob({ namespace, body }));
    } catch (error) {
      if (!isConflict(error)) throw new Error(`Kubernetes refused the Job: ${describeApiError(error)}`, { cause: error });
      // Submitted before (a retry after a crash): the Job of the same task is this one.
      const existing = await this.api.call('read Job', () => this.api.batch.readNamespacedJob({ name: body.metadata!.name!, namespace }));
      if (existing.metadata?.labels?.[TASK_ID_LABEL] !== taskId) throw new Error(`Job ${body.metadata!.name} exists and belongs to another task`);
      if (!this.ours(existing)) throw new Error(`Job ${body.metadata!.name} exists and was not created by this dispatcher`);
      return existing;
    }
  }

  private async patchJob(ref: string, body: object[], why: string): Promise<void> {
    const { namespace, name } = parseRef(ref, this.options.namespace);
    await this.api.call(why, () => this.api.batch.patchNamespacedJob({ name, namespace, body }));
  }

  private async deleteJob(ref: string, why: string): Promise<void> {
    const { namespace, name } = parseRef(ref, this.options.namespace);
    try {
      await this.api.call(why, () => this.api.batch.deleteNamespacedJob({ name, namespace, propagationPolicy: 'Background' }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  private async podsOf(namespace: string, labelSelector: string): Promise<V1Pod[]> {
    const pods = await this.api.call('list Pods', () => this.api.core.listNamespacedPod({ namespace, labelSelector }));
    return pods.items.sort(byCreation);
  }

  private watchNamespace(namespace: string): void {
    if (this.watches.has(namespace)) return;
    const labelSelector = managedSelector(this.settings);
    const common = { labelSelector, retryDelayMs: this.options.watchRetryDelayMs, timeoutSeconds: this.options.watchTimeoutSeconds, silenceSeconds: this.options.watchSilenceSeconds };
    const jobs = new ResourceWatch<V1Job>(this.api, {
      ...common,
      description: `Jobs in ${namespace}`,
      path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
      list: () => this.api.call('list Jobs', () => this.api.batch.listNamespacedJob({ namespace, labelSelector })),
      keep: slimJob,
      // A Job someone else labelled as a task's speaks for no task.
      onChange: (change) => {
        if (this.ours(change.object)) this.agents.jobChanged(namespace, change);
      },
    });
    const pods = new ResourceWatch<V1Pod>(this.api, {
      ...common,
      description: `Pods in ${namespace}`,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: () => this.api.call('list Pods', () => this.api.core.listNamespacedPod({ namespace, labelSelector })),
      keep: slimPod,
      onChange: (change) => this.agents.podChanged(namespace, change),
    });
    this.watches.set(namespace, [jobs, pods] as ResourceWatch<V1Job | V1Pod>[]);
    jobs.start();
    pods.start();
    this.keeper.ensureBaseline(namespace).catch((error: unknown) => this.logger.warn(`No default-deny policy for agents in ${namespace} yet: ${String(error)}`));
    this.keeper.start();
  }

  /** The agent will not start: delete its Job so nothing keeps retrying the pull or the scheduling. */
  private async abandon(taskId: string, agent: TrackedAgent, problem: StartProblem): Promise<void> {
    const name = agent.job?.metadata?.name ?? jobName(taskId);
    this.logger.warn(`Task ${taskId}: the agent could not start (${problem.reason}); deleting Job ${name}`);
    await this.deleteJob(`${agent.namespace}/${name}`, `delete Job ${name} that could not start`).catch((error: unknown) =>
      this.logger.error(`Could not delete Job ${name}: ${describeApiError(error)}`));
  }

  private async recordDisruptions(taskId: string, agent: TrackedAgent, uids: string[]): Promise<void> {
    const name = agent.job?.metadata?.name ?? jobName(taskId);
    await this.patchJob(`${agent.namespace}/${name}`, recordDisruptionsPatch(agent.job, uids), `record the disrupted pods of task ${taskId}`).catch((error: unknown) =>
      this.logger.warn(`Task ${taskId}: could not record its disrupted pods on Job ${name}: ${describeApiError(error)}`));
  }

  /** Suspends the Job of a task evicted too often, so its replacement pod ends under its policy; `remove` deletes the Job. */
  private async stopOverEvicted(taskId: string, agent: TrackedAgent): Promise<void> {
    const name = agent.job?.metadata?.name ?? jobName(taskId);
    this.logger.warn(`Task ${taskId}: its pods were disrupted more often than AGENT_MAX_EVICTION_REPLACEMENTS allows; suspending Job ${name}`);
    await this.patchJob(`${agent.namespace}/${name}`, [{ op: 'add', path: '/spec/suspend', value: true }], `suspend Job ${name} evicted too often`).catch((error: unknown) => {
      if (!isNotFound(error)) this.logger.error(`Could not suspend Job ${name}: ${describeApiError(error)}`);
    });
  }

  /**
   * Why a Job past its start grace still has no pod: the Job controller's latest FailedCreate
   * warning event on it (`Error creating: pods "x" is forbidden: exceeded quota: ...`), its
   * `Error creating: ` prefix dropped. None, or a pod that the watch has not brought yet: undefined.
   */
  private async podCreationProblem(taskId: string, agent: TrackedAgent): Promise<StartProblem | undefined> {
    const job = agent.job;
    if (!job?.metadata?.name) return undefined;
    const { name, uid } = job.metadata;
    try {
      if ((await this.podsOf(agent.namespace, `${TASK_ID_LABEL}=${taskId}`)).length > 0) return undefined;
      const fieldSelector = `involvedObject.kind=Job,involvedObject.name=${name}`;
      const events = await this.api.call('list Events', () => this.api.core.listNamespacedEvent({ namespace: agent.namespace, fieldSelector }), { ...DEFAULT_RETRY, attempts: 2 });
      const failed = events.items
        // An earlier Job of the same name (the task submitted again) has another uid.
        .filter((event) => event.type === 'Warning' && event.reason === 'FailedCreate' && event.message && (!uid || !event.involvedObject.uid || event.involvedObject.uid === uid))
        .sort((a, b) => eventTime(a) - eventTime(b))
        .at(-1);
      return failed ? { reason: 'FailedCreate', message: failed.message!.replace(/^Error creating: /, '') } : undefined;
    } catch (error) {
      this.logger.warn(`Task ${taskId}: could not read why Job ${name} has no pod: ${describeApiError(error)}`);
      return undefined;
    }
  }

  /** The pod's latest warning event, when it says more than the container status. */
  private async withWarningEvent(namespace: string, pod: V1Pod | undefined, message: string): Promise<string> {
    if (!pod?.metadata?.name) return message;
    try {
      const fieldSelector = `involvedObject.kind=Pod,involvedObject.name=${pod.metadata.name}`;
      const events = await this.api.call('list Events', () => this.api.core.listNamespacedEvent({ namespace, fieldSelector }), { ...DEFAULT_RETRY, attempts: 2 });
      // A list comes in key order (the events' generated names), not in time order.
      const warning = events.items.filter((event) => event.type === 'Warning' && event.message).sort((a, b) => eventTime(a) - eventTime(b)).at(-1);
      return warning?.message && !message.includes(warning.message) && !warning.message.includes(message)
        ? `${message} (${warning.reason}: ${warning.message})`
        : message;
    } catch {
      return message;
    }
  }
}

/** When an event last happened (events.k8s.io series, the core fields, or its creation). */
function eventTime(event: CoreV1Event): number {
  const at = event.series?.lastObservedTime ?? event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata?.creationTimestamp;
  return at ? new Date(at).getTime() : 0;
}

export function parseRef(ref: string, defaultNamespace: string): { namespace: string; name: string } {
  const slash = ref.indexOf('/');
  return slash < 0 ? { namespace: defaultNamespace, name: ref } : { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}
