import type { V1Job, V1JobSpec, V1ObjectMeta, V1Pod } from '@kubernetes/client-node';

/**
 * What the backend keeps of each watched Job and Pod: metadata (names, uid, labels, the
 * annotations it reads, owners, deletion) and status, plus a Job's `suspend`. The pod
 * template and the pod spec (containers, env, volumes, security context, managedFields)
 * are most of each object and nothing reads them after the submit; with 10,000 agents they
 * would be most of the dispatcher's memory.
 */
export function slimJob(job: V1Job): V1Job {
  return {
    apiVersion: job.apiVersion,
    kind: job.kind,
    metadata: slimMetadata(job.metadata),
    spec: job.spec ? ({ suspend: job.spec.suspend } as V1JobSpec) : undefined,
    status: job.status,
  };
}

export function slimPod(pod: V1Pod): V1Pod {
  return { apiVersion: pod.apiVersion, kind: pod.kind, metadata: slimMetadata(pod.metadata), status: pod.status };
}

function slimMetadata(metadata: V1ObjectMeta | undefined): V1ObjectMeta | undefined {
  if (!metadata) return undefined;
  const { name, namespace, uid, resourceVersion, creationTimestamp, deletionTimestamp, labels, annotations, ownerReferences } = metadata;
  return { name, namespace, uid, resourceVersion, creationTimestamp, deletionTimestamp, labels, annotations, ownerReferences };
}
