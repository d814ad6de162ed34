import { Logger } from '@nestjs/common';
import type { V1Job, V1NetworkPolicy, V1NetworkPolicySpec } from '@kubernetes/client-node';
import { describeApiError, isConflict, KubeApi } from './kubernetes-client';
import { EGRESS_POLICY_ANNOTATION, managedLabels, ManifestSettings, TASK_ID_LABEL } from './kubernetes-manifests';
import { buildDefaultDenyPolicy, defaultDenyPolicyName, jobOwner, networkPolicyName } from './kubernetes-network-policy';

/**
 * Keeps the egress policies of agent namespaces in place: each namespace's default-deny
 * baseline, and each live Job's own policy, put back from the copy its Job carries when
 * someone deleted it. A policy that is there is never touched (not deleted and created
 * again under a running pod). Every replica may run this: creation is idempotent (409 is
 * an answer), so twins need no coordination.
 */
export class EgressKeeper {
  private readonly logger = new Logger('KubernetesEgress');
  private readonly baselines = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly settings: ManifestSettings,
    private readonly live: { namespaces(): string[]; jobs(namespace: string): V1Job[] },
    private readonly intervalMs: number,
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
    await this.running?.catch(() => undefined);
  }

  /** Resolves once the namespace's baseline exists (created now when missing); retried on the next call after a failure. */
  ensureBaseline(namespace: string): Promise<void> {
    let ensured = this.baselines.get(namespace);
    if (!ensured) {
      ensured = this.createIfMissing(namespace, buildDefaultDenyPolicy(this.settings, namespace));
      ensured.catch(() => this.baselines.delete(namespace));
      this.baselines.set(namespace, ensured);
    }
    return ensured;
  }

  /** One list of policies per namespace; whatever is missing is created. */
  async reconcile(): Promise<void> {
    for (const namespace of this.live.namespaces()) {
      // Jobs before policies: a Job resumed after this snapshot had its policy created before the list below.
      const jobs = this.live.jobs(namespace).filter((job) => job.spec?.suspend !== true);
      try {
        // Not by label: the chart ships the baseline with its own labels.
        const present = new Set((await this.api.call('list NetworkPolicies', () =>
          this.api.networking.listNamespacedNetworkPolicy({ namespace }))).items.map((p) => p.metadata?.name));
        if (!present.has(defaultDenyPolicyName(this.settings))) {
          this.logger.warn(`The default-deny policy of agents in ${namespace} was missing; putting it back`);
          await this.createIfMissing(namespace, buildDefaultDenyPolicy(this.settings, namespace));
        }
        // A suspended Job has no pod to isolate, and its submit (which creates the policy) may still be under way.
        for (const job of jobs) {
          const policy = policyOfJob(job, this.settings);
          if (!policy || present.has(policy.metadata!.name)) continue;
          this.logger.warn(`The egress policy of Job ${job.metadata!.name} was missing; putting it back`);
          await this.createIfMissing(namespace, policy);
        }
      } catch (error) {
        this.logger.warn(`Could not check the egress policies in ${namespace}: ${describeApiError(error)}`);
      }
    }
  }

  private async createIfMissing(namespace: string, body: V1NetworkPolicy): Promise<void> {
    try {
      await this.api.call('create NetworkPolicy', () => this.api.networking.createNamespacedNetworkPolicy({ namespace, body }));
    } catch (error) {
      if (!isConflict(error)) throw new Error(`Kubernetes refused the NetworkPolicy ${body.metadata!.name}: ${describeApiError(error)}`, { cause: error });
    }
  }
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
