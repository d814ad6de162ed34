import type { V1Job, V1Secret } from '@kubernetes/client-node';
import { describeApiError, isConflict, isNotFound, KubeApi } from './kubernetes-client';

/** A JSON patch that makes the Job the object's only owner (and controller), so it goes when the Job goes. */
export function ownedByJob(job: V1Job): object[] {
  const owner = { apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true, blockOwnerDeletion: false };
  return [{ op: 'add', path: '/metadata/ownerReferences', value: [owner] }];
}

/**
 * The per-task Secret that holds the agent key. It is created before its Job, so the
 * kubelet never meets a pod whose Secret does not exist yet (CreateContainerConfigError,
 * retried until it appears), and then handed to the Job through an owner reference, so
 * it goes when the Job goes. A Secret without an owner is only ever one whose Job could
 * not be created; it is deleted then.
 */
export class AgentSecrets {
  constructor(private readonly api: KubeApi) {}

  async create(namespace: string, body: V1Secret): Promise<void> {
    const name = body.metadata!.name!;
    try {
      await this.api.call('create Secret', () => this.api.core.createNamespacedSecret({ namespace, body }));
    } catch (error) {
      if (!isConflict(error)) throw new Error(`Kubernetes refused the agent's Secret: ${describeApiError(error)}`);
      // Left by an earlier attempt: if an earlier Job owns it, it would be collected with that Job.
      await this.remove(namespace, name);
      await this.api.call('create Secret', () => this.api.core.createNamespacedSecret({ namespace, body }));
    }
  }

  /** Makes the Job the Secret's owner (and controller), replacing any earlier owner. */
  async adopt(namespace: string, name: string, job: V1Job): Promise<void> {
    const body = ownedByJob(job);
    try {
      await this.api.call('patch Secret owner', () => this.api.core.patchNamespacedSecret({ name, namespace, body }));
    } catch (error) {
      throw new Error(`Kubernetes refused to hand the agent's Secret to its Job: ${describeApiError(error)}`);
    }
  }

  async remove(namespace: string, name: string): Promise<void> {
    try {
      await this.api.call('delete Secret', () => this.api.core.deleteNamespacedSecret({ name, namespace }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
