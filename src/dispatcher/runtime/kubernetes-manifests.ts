import { createHash } from 'node:crypto';
import { Job } from 'kubernetes-models/batch/v1';
import { Secret } from 'kubernetes-models/v1';
import type { V1Job, V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { AgentSpec } from './runtime';
import { checkKnownFields } from './kubernetes-manifest-fields';
import { applyIsolation } from './kubernetes-isolation';
import { JobShaping, shapeJob } from './kubernetes-job-shaping';
import { applyPodAdditions } from './kubernetes-pod-additions';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const TASK_ID_LABEL = 'task-id';
export const AGENT_CONTAINER = 'agent';
export const AGENT_KEY_ENV = 'AGENT_KEY';
export const AGENT_KEY_SECRET_KEY = 'agent-key';
/** SIGTERM, then SIGKILL after this long (the contract's stop grace). */
export const STOP_GRACE_SECONDS = 10;
/** activeDeadlineSeconds is the task's timeout plus this, so the dispatcher's timeout acts first. */
export const DEADLINE_MARGIN_SECONDS = 30;
/** The Job's copy of its agent's egress policy spec, from which a deleted policy is put back. */
export const EGRESS_POLICY_ANNOTATION = 'agent-tasks.dev/egress-policy';
/** The uids of the Job's pods that were disrupted (evicted, preempted), comma-separated: every replica and a restart count the same. */
export const DISRUPTED_PODS_ANNOTATION = 'agent-tasks.dev/disrupted-pods';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

export interface ManifestSettings {
  namespace: string;
  dispatcherName: string;
  ttlSecondsAfterFinished: number;
  /** Disruption policy and the dispatcher's pod template (kubernetes-job-shaping.ts); unset: one attempt, nothing added. */
  shaping?: JobShaping;
  /** AGENT_EPHEMERAL_STORAGE_LIMIT and AGENT_EMPTYDIR_SIZE_LIMIT: no agent fills a node's disk (DiskPressure evicts its neighbours). */
  storage?: { ephemeral: string; emptyDirSizeLimit: string };
}

/** A DNS-1123 label from any text: lower-case, `a-z0-9-`, at most 63 characters (hash-suffixed when cut). */
export function dnsLabel(prefix: string, text: string, suffix = ''): string {
  const cleaned = `${prefix}-${text}`.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-+|-+$/g, '');
  const room = 63 - suffix.length;
  if (cleaned.length <= room) return `${cleaned}${suffix}`;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  return `${cleaned.slice(0, room - 9).replace(/-+$/, '')}-${hash}${suffix}`;
}

export const jobName = (taskId: string): string => dnsLabel('agent', taskId);
export const secretName = (taskId: string): string => dnsLabel('agent', taskId, '-key');

/** A valid label value from any text (the dispatcher's name may hold spaces or capitals). */
export function labelValue(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9_.-]+/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return cleaned || 'dispatcher';
}

export function managedLabels(settings: Pick<ManifestSettings, 'dispatcherName'>, taskId?: string): Record<string, string> {
  return { [MANAGED_BY_LABEL]: labelValue(settings.dispatcherName), ...(taskId ? { [TASK_ID_LABEL]: labelValue(taskId) } : {}) };
}

export function managedSelector(settings: Pick<ManifestSettings, 'dispatcherName'>): string {
  return `${MANAGED_BY_LABEL}=${labelValue(settings.dispatcherName)}`;
}

/**
 * The Job that runs one agent: one attempt (`backoffLimit: 0`, `restartPolicy: Never`),
 * a deadline past the task's timeout, removal after `ttlSecondsAfterFinished`, the
 * task's resources as requests and limits, and the per-task agent key read from the
 * task's Secret rather than written into the Job. It is created suspended: its Secret and
 * egress policy are created owned by it, and only then is it resumed and its pod made.
 */
export function buildJob(spec: AgentSpec, settings: ManifestSettings): V1Job {
  const labels = managedLabels(settings, spec.taskId);
  const env = Object.entries(spec.env)
    .filter(([name]) => name !== AGENT_KEY_ENV)
    .map(([name, value]) => ({ name, value }));
  env.push({ name: AGENT_KEY_ENV, valueFrom: { secretKeyRef: { name: secretName(spec.taskId), key: AGENT_KEY_SECRET_KEY } } } as never);
  // The task's secret_env: Secrets in the task's namespace, read by the kubelet; the value never passes through the dispatcher.
  for (const [name, ref] of Object.entries(spec.secretEnv ?? {})) {
    env.push({ name, valueFrom: { secretKeyRef: { name: ref.secret, key: ref.key } } } as never);
  }
  const job: V1Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: jobName(spec.taskId), namespace: spec.namespace || settings.namespace, labels },
    spec: {
      suspend: true,
      backoffLimit: 0,
      completions: 1,
      parallelism: 1,
      activeDeadlineSeconds: spec.timeoutSeconds + DEADLINE_MARGIN_SECONDS,
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          // Agents have no business with the Kubernetes API.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: STOP_GRACE_SECONDS,
          containers: [{
            name: AGENT_CONTAINER,
            image: spec.image,
            env,
            resources: {
              requests: { cpu: spec.resources.cpu, memory: spec.resources.memory },
              limits: { cpu: spec.resources.cpu, memory: spec.resources.memory },
            },
            ports: spec.ports.map((port) => ({ containerPort: port.containerPort, protocol: port.protocol })),
          }],
        },
      },
    },
  };
  applyIsolation(job, spec.isolation);
  if (settings.storage) limitStorage(job, settings.storage);
  if (settings.shaping) shapeJob(job, settings.shaping);
  if (spec.pod) applyPodAdditions(job, spec.pod);
  assertValidJob(job);
  return job;
}

/** Every emptyDir gets a sizeLimit and the agent container an ephemeral-storage request and limit. */
function limitStorage(job: V1Job, storage: NonNullable<ManifestSettings['storage']>): void {
  const pod = job.spec!.template.spec!;
  for (const volume of pod.volumes ?? []) if (volume.emptyDir) volume.emptyDir.sizeLimit = storage.emptyDirSizeLimit;
  for (const container of pod.containers) {
    container.resources = {
      requests: { ...container.resources?.requests, 'ephemeral-storage': storage.ephemeral },
      limits: { ...container.resources?.limits, 'ephemeral-storage': storage.ephemeral },
    };
  }
}

/** The per-task Secret holding AGENT_KEY, owned by its suspended Job (kubernetes-secrets.ts). */
export function buildSecret(spec: AgentSpec, settings: ManifestSettings, owner?: V1OwnerReference): V1Secret {
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: secretName(spec.taskId),
      namespace: spec.namespace || settings.namespace,
      labels: managedLabels(settings, spec.taskId),
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    type: 'Opaque',
    data: { [AGENT_KEY_SECRET_KEY]: Buffer.from(spec.env[AGENT_KEY_ENV] ?? '').toString('base64') },
  };
  assertValidSecret(secret);
  return secret;
}

export class ManifestError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid manifest: ${problems.join('; ')}`);
  }
}

/** The Kubernetes schema (kubernetes-models) plus the rules it does not check. */
export function jobProblems(job: V1Job): string[] {
  const problems = schemaProblems(() => new Job(job as never).validate());
  problems.push(...checkKnownFields('Job', job), ...metadataProblems(job.metadata), ...metadataProblems(job.spec?.template.metadata, false));
  const pod = job.spec?.template.spec;
  if (pod?.restartPolicy !== 'Never' && pod?.restartPolicy !== 'OnFailure') {
    problems.push(`spec.template.spec.restartPolicy must be Never or OnFailure for a Job (got ${pod?.restartPolicy})`);
  }
  for (const container of pod?.containers ?? []) {
    if (!DNS_LABEL.test(container.name)) problems.push(`container name "${container.name}" is not a DNS-1123 label`);
    if (!container.image?.trim()) problems.push(`container "${container.name}" has no image`);
    for (const variable of container.env ?? []) {
      if (!ENV_NAME.test(variable.name)) problems.push(`env name "${variable.name}" is not a valid variable name`);
    }
  }
  return problems;
}

export function secretProblems(secret: V1Secret): string[] {
  const problems = schemaProblems(() => new Secret(secret as never).validate());
  problems.push(...checkKnownFields('Secret', secret), ...metadataProblems(secret.metadata));
  for (const key of Object.keys(secret.data ?? {})) {
    if (!/^[-._a-zA-Z0-9]+$/.test(key)) problems.push(`secret key "${key}" is not valid`);
  }
  return problems;
}

function assertValidJob(job: V1Job): void {
  const problems = jobProblems(job);
  if (problems.length > 0) throw new ManifestError(problems);
}

function assertValidSecret(secret: V1Secret): void {
  const problems = secretProblems(secret);
  if (problems.length > 0) throw new ManifestError(problems);
}

function schemaProblems(validate: () => void): string[] {
  try {
    validate();
    return [];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

function metadataProblems(metadata: { name?: string; labels?: Record<string, string> } | undefined, named = true): string[] {
  const problems: string[] = [];
  if (named && (!metadata?.name || !DNS_LABEL.test(metadata.name) || metadata.name.length > 63)) {
    problems.push(`metadata.name "${metadata?.name ?? ''}" is not a DNS-1123 label`);
  }
  for (const [key, value] of Object.entries(metadata?.labels ?? {})) {
    const [prefix, name] = key.includes('/') ? key.split('/', 2) : [undefined, key];
    const keyValid = LABEL_KEY_NAME.test(name) && name.length <= 63 && (prefix === undefined || (prefix.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(prefix)));
    if (!keyValid) problems.push(`label key "${key}" is not valid`);
    if (value.length > 63 || !LABEL_VALUE.test(value)) problems.push(`label "${key}" has an invalid value "${value}"`);
  }
  return problems;
}
