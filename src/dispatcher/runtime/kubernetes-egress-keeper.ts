import { Logger } from '@nestjs/common';
import type { V1Job, V1NetworkPolicy, V1NetworkPolicySpec } from '@kubernetes/client-node';
import { describeApiError, isConflict, KubeApi } from './kubernetes-client';
import { EGRESS_POLICY_ANNOTATION, managedLabels, ManifestSettings, TASK_ID_LABEL } from './kubernetes-manifests';
import { buildDefaultDenyPolicy, defaultDenyPolicyName, jobOwner, networkPolicyName } from './kubernetes-network-policy';
import { ResourceWatch, ResourceWatchOptions } from './kubernetes-watch';

/**
 * Keeps the egress policies of agent namespaces in place: each namespace's default-deny
 * baseline, and each live Job's own policy, put back from the copy its Job carries when
 * someone deleted it. A policy that is there is never touched (not deleted and created
 * again under a running pod). Every replica may run this: creation is idempotent (409 is
 * an answer), so twins need no coordination.
 *
 * The policies present are known from a watch of each namespace's NetworkPolicies (names
 * only kept), so a deletion is answered when the watch brings it, and the periodic pass
 * compares live Jobs with that picture in memory: with 10,000 agents running, it no longer
 * lists 10,000 policies from the API server every interval.
 */
export class EgressKeeper {
  private readonly logger = new Logger('KubernetesEgress');
  private readonly baselines = new Map<string, Promise<void>>();
  private readonly policies = new Map<string, { watch: ResourceWatch<V1NetworkPolicy>; names: Set<string>; synced: boolean }>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly settings: ManifestSettings,
    private readonly live: { namespaces(): string[]; jobs(namespace: string): V1Job[]; job(taskId: string): V1Job | undefined },
    private readonly intervalMs: number,
    private readonly watchOptions: Pick<ResourceWatchOptions<V1NetworkPolicy>, 'retryDelayMs' | 'timeoutSeconds' | 'silenceSeconds'> = {},
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.reconcile().finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const { watch } of this.policies.values()) watch.stop();
    await this.running?.catch(() => undefined);
  }

  /** Resolves once the namespace's baseline exists (created now when missing); retried on the next call after a failure. */
  ensureBaseline(namespace: string): Promise<void> {
    this.watchPolicies(namespace);
    let ensured = this.baselines.get(namespace);
    if (!ensured) {
      const baseline = buildDefaultDenyPolicy(this.settings, namespace);
      ensured = this.createIfMissing(namespace, baseline).then(() => this.noteCreated(namespace, baseline.metadata!.name!));
      ensured.catch(() => this.baselines.delete(namespace));
      this.baselines.set(namespace, ensured);
    }
    return ensured;
  }

  /** A policy just created (or found there): the periodic pass need not wait for the watch to bring it. */
  noteCreated(namespace: string, name: string): void {
    this.policies.get(namespace)?.names.add(name);
  }

  /** Whatever the watched picture of each namespace lacks is created: the baseline, and the policy of each live, resumed Job. */
  async reconcile(): Promise<void> {
    for (const namespace of this.live.namespaces()) {
      const known = this.policies.get(namespace);
      if (!known?.synced) continue;
      // A suspended Job has no pod to isolate, and its submit (which creates the policy) may still be under way.
      const missing = this.live.jobs(namespace).filter((job) => job.spec?.suspend !== true && !known.names.has(networkPolicyName(job.metadata?.labels?.[TASK_ID_LABEL] ?? '')));
      try {
        if (!known.names.has(defaultDenyPolicyName(this.settings))) await this.putBack(namespace, buildDefaultDenyPolicy(this.settings, namespace), 'The default-deny policy of agents');
        for (const job of missing) {
          const policy = policyOfJob(job, this.settings);
          if (policy && !known.names.has(policy.metadata!.name!)) await this.putBack(namespace, policy, `The egress policy of Job ${job.metadata!.name}`);
        }
      } catch (error) {
        this.logger.warn(`Could not put back the egress policies in ${namespace}: ${describeApiError(error)}`);
      }
    }
  }

  /** One watch of every NetworkPolicy in the namespace (not by label: the chart ships the baseline with its own labels). */
  private watchPolicies(namespace: string): void {
    if (this.policies.has(namespace)) return;
    const names = new Set<string>();
    const entry = {
      names,
      synced: false,
      watch: new ResourceWatch<V1NetworkPolicy>(this.api, {
        ...this.watchOptions,
        description: `NetworkPolicies in ${namespace}`,
        path: `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies`,
        labelSelector: '',
        list: () => this.api.call('list NetworkPolicies', () => this.api.networking.listNamespacedNetworkPolicy({ namespace })),
        keep: slimPolicy,
        onChange: (change) => {
          const name = change.object.metadata?.name ?? '';
          if (change.type !== 'DELETED') return void names.add(name);
          names.delete(name);
          if (entry.synced) void this.onDeleted(namespace, name, change.object.metadata?.labels?.[TASK_ID_LABEL]);
        },
      }),
    };
    this.policies.set(namespace, entry);
    entry.watch.start();
    void entry.watch.synced().then(async () => {
      // The baseline being created now is not in the list yet: judged after its creation.
      await this.baselines.get(namespace)?.catch(() => undefined);
      entry.synced = true;
      this.running ??= this.reconcile().finally(() => (this.running = undefined));
    });
  }

  /** A policy the watch saw deleted is put back at once when it is the baseline or a live, resumed Job's. */
  private async onDeleted(namespace: string, name: string, taskId: string | undefined): Promise<void> {
    try {
      if (name === defaultDenyPolicyName(this.settings)) {
        await this.putBack(namespace, buildDefaultDenyPolicy(this.settings, namespace), 'The default-deny policy of agents');
        return;
      }
      const job = taskId ? this.live.job(taskId) : undefined;
      if (!job || job.metadata?.namespace !== namespace || job.spec?.suspend === true) return;
      const policy = policyOfJob(job, this.settings);
      if (policy?.metadata!.name === name) await this.putBack(namespace, policy, `The egress policy of Job ${job.metadata!.name}`);
    } catch (error) {
      this.logger.warn(`Could not put back the NetworkPolicy ${name} in ${namespace}: ${describeApiError(error)}`);
    }
  }

  private async putBack(namespace: string, policy: V1NetworkPolicy, what: string): Promise<void> {
    this.logger.warn(`${what} in ${namespace} was missing; putting it back`);
    await this.createIfMissing(namespace, policy);
    this.noteCreated(namespace, policy.metadata!.name!);
  }

  private async createIfMissing(namespace: string, body: V1NetworkPolicy): Promise<void> {
    try {
      await this.api.call('create NetworkPolicy', () => this.api.networking.createNamespacedNetworkPolicy({ namespace, body }));
    } catch (error) {
      if (!isConflict(error)) throw new Error(`Kubernetes refused the NetworkPolicy ${body.metadata!.name}: ${describeApiError(error)}`, { cause: error });
    }
  }
}

/** What the keeper keeps of a watched policy: its name, and the task label that leads to its Job. */
function slimPolicy(policy: V1NetworkPolicy): V1NetworkPolicy {
  const { name, namespace, resourceVersion, labels } = policy.metadata ?? {};
  const taskId = labels?.[TASK_ID_LABEL];
  return { metadata: { name, namespace, resourceVersion, ...(taskId ? { labels: { [TASK_ID_LABEL]: taskId } } : {}) } };
}

/** The task policy a Job carries a copy of (EGRESS_POLICY_ANNOTATION), owned by it; none for a Job being deleted. */
export function policyOfJob(job: V1Job, settings: ManifestSettings): V1NetworkPolicy | undefined {
  const copy = job.metadata?.annotations?.[EGRESS_POLICY_ANNOTATION];
  const taskId = job.metadata?.labels?.[TASK_ID_LABEL];
  if (!copy || !taskId || job.metadata?.deletionTimestamp) return undefined;
  let spec: V1NetworkPolicySpec;
  try {
    spec = JSON.parse(copy) as V1NetworkPolicySpec;
  } catch {
    return undefined;
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: networkPolicyName(taskId), namespace: job.metadata!.namespace, labels: managedLabels(settings, taskId), ownerReferences: [jobOwner(job)] },
    spec,
  };
}
