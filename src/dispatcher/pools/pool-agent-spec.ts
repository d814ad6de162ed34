import { AppConfig } from '../../shared/config/config';
import { WarmPool } from '../../shared/config/warm-pools-settings';
import { isolationOf } from '../scheduler/agent-spec';
import { AgentSpec } from '../runtime/runtime';
import { poolAgentKey } from './pool-keys';

/** How long a pool agent may wait for its task and run it (its runtime's deadline, where it has one). */
export const POOL_AGENT_TIMEOUT_SECONDS = 86_400;

/**
 * A pool agent as its runtime starts it: the pool's image, resources and runtime class with
 * the dispatcher's default isolation; DISPATCHER_URL, AGENT_POOL, AGENT_ID and the pool key,
 * and no TASK_ID. The runtime knows it by its agent id.
 */
export function poolAgentSpecOf(pool: WarmPool, agentId: string, config: Pick<AppConfig, 'agentKey' | 'agentDispatcherUrl' | 'agentIsolation'>): AgentSpec {
  return {
    taskId: agentId,
    image: pool.image,
    namespace: pool.namespace,
    env: {
      DISPATCHER_URL: config.agentDispatcherUrl,
      AGENT_POOL: pool.name,
      AGENT_ID: agentId,
      AGENT_KEY: poolAgentKey(config.agentKey, pool.name),
    },
    resources: pool.resources,
    ports: [],
    timeoutSeconds: POOL_AGENT_TIMEOUT_SECONDS,
    isolation: isolationOf({ runtimeClass: pool.runtimeClass, network: null, security: null }, config.agentIsolation),
  };
}
