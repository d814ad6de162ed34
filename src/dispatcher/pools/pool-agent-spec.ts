import { AppConfig } from '../../shared/config/config';
import { WarmPool } from '../../shared/config/warm-pools-settings';
import { isolationOf } from '../scheduler/agent-spec';
import { AgentSpec } from '../runtime/runtime';
import { poolAgentKey } from './pool-keys';
import { AgentIsolationDefaults } from '../../shared/config/isolation-config';
import { AgentIsolation } from '../../shared/task-protocol/isolation';

/**
 * A pool agent's isolation: the dispatcher's defaults with the pool's runtime class. On Kubernetes
 * a warm pod reaches DNS and the dispatcher only, whatever the default egress: its task's own
 * policy is added at claim.
 */
export function poolIsolationOf(pool: WarmPool, defaults: AgentIsolationDefaults): AgentIsolation {
  const isolation = isolationOf({ runtimeClass: pool.runtimeClass, network: null, security: null }, defaults);
  return pool.backend === 'kubernetes' ? { ...isolation, network: { egress: 'dispatcher', allow: [] } } : isolation;
}

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
    isolation: poolIsolationOf(pool, config.agentIsolation),
    warm: true,
  };
}
