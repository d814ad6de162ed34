import type { V1Secret } from '@kubernetes/client-node';
import { describeApiError, isConflict, isNotFound, KubeApi } from './kubernetes-client';

/**
 * The per-task Secret that holds the agent key. It is created after its Job, which is
 * created suspended (no pod yet, so the kubelet never meets a pod whose Secret does not
 * exist), and created already owned by that Job, so it goes when the Job goes: the
 * dispatcher never patches a Secret (a PATCH answers with the object, so `secrets: patch`
 * would read every Secret of the namespace).
 */
export class AgentSecrets {
  constructor(private readonly api: KubeApi) {}

  async create(namespace: string, body: V1Secret): Promise<void> {
    const name = body.metadata!.name!;
    try {
      await this.api.call('create Secret', () => this.api.core.createNamespacedSecret({ namespace, body }));
    } catch (error) {
      if (!isConflict(error)) throw new Error(`Kubernetes refused the agent's Secret: ${describeApiError(error)}`, { cause: error });
      // Left by an earlier attempt, owned by an earlier Job that would take it along: replaced.
      await this.remove(namespace, name);
      await this.api.call('create Secret', () => this.api.core.createNamespacedSecret({ namespace, body }));
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
