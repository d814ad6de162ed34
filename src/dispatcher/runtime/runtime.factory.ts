import { AppConfig } from '../../shared/config/config';
import { DockerRuntime } from './docker-runtime';
import { KubernetesRuntime } from './kubernetes-runtime';
import { ProcessRuntime } from './process-runtime';
import { RuntimeBackend } from './runtime';

/** The backends named by DISPATCHER_BACKENDS, each built from its settings. */
export function createRuntimeBackends(config: AppConfig): RuntimeBackend[] {
  return config.dispatcherBackends.flatMap((name): RuntimeBackend[] => {
    switch (name) {
      case 'local':
        return [createLocalRuntime(config)];
      case 'kubernetes':
        return [KubernetesRuntime.fromConfig(config)];
      default:
        return [];
    }
  });
}

/** LOCAL_ENGINE picks how `local` runs agents: child processes or containers. */
function createLocalRuntime(config: AppConfig): RuntimeBackend {
  switch (config.localEngine) {
    case 'process':
      return new ProcessRuntime(config);
    case 'docker':
      // DOCKER_NETWORK (default host) lets an agent reach a dispatcher that listens on 127.0.0.1.
      return new DockerRuntime({
        dockerHost: config.dockerHost, dispatcherName: config.dispatcherName, network: config.dockerNetwork, pidsLimit: config.agentIsolation.pidsLimit, secretsFile: config.agentSecretsFile,
      });
  }
}
