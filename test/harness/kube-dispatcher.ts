import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KubeApiServer } from '../k8s/kube-api-server';
import { startTestSystem, TestSystem } from './system';

export interface KubeDispatcher {
  kube: KubeApiServer;
  system: TestSystem;
  close(): Promise<void>;
}

/**
 * A dispatcher whose kubernetes backend talks to a Kubernetes API test server over a
 * kubeconfig file, as in a cluster; `env` adds to or overrides its settings.
 */
export async function startKubeDispatcher(env: Record<string, string>, token = 'dispatcher-service-account-token'): Promise<KubeDispatcher> {
  const kube = await KubeApiServer.start({ token, namespaces: ['agents'] });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
  const kubeconfig = path.join(dir, 'config');
  fs.writeFileSync(kubeconfig, kube.kubeconfig('agents'));
  const system = await startTestSystem({
    role: 'dispatcher',
    env: { DISPATCHER_BACKENDS: 'kubernetes', KUBECONFIG: kubeconfig, KUBE_NAMESPACE: 'agents', START_GRACE_SECONDS: '2', ...env },
  });
  return {
    kube,
    system,
    close: async () => {
      await system.close();
      await kube.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
