import { isDeepStrictEqual } from 'node:util';
import { AgentIsolationDefaults } from '../../shared/config/isolation-config';
import { WarmPool } from '../../shared/config/warm-pools-settings';
import { parseQuantity } from '../../shared/validation/quantities';
import { isolationOf } from '../scheduler/agent-spec';
import { TaskEntity } from '../tasks/task.entity';

export type FitTask = Pick<TaskEntity, 'agentImage' | 'runtimeType' | 'runtimeNamespace' | 'resources' | 'runtimeClass' | 'network' | 'security' | 'secretEnv' | 'podAdditions'>;

export interface FitSettings {
  kubeNamespace: string;
  agentIsolation: AgentIsolationDefaults;
}

/**
 * The pool whose idle agent may take the task, or null (the task starts cold). A task fits
 * when its image, backend (and namespace), runtime class are the pool's and its resources no
 * more than the pool's. What a running agent can no longer change starts cold as well: on the
 * local engines a container's or process's network, security and secret values are fixed when
 * it starts, so only tasks asking for the dispatcher's defaults and no secrets fit there; pod
 * additions are fixed on every engine.
 */
export function fittingPool(task: FitTask, pools: readonly WarmPool[], settings: FitSettings): WarmPool | null {
  return pools.find((pool) => fits(task, pool, settings)) ?? null;
}

export function fits(task: FitTask, pool: WarmPool, settings: FitSettings): boolean {
  if (pool.size === 0 || task.agentImage !== pool.image || task.runtimeType !== pool.backend) return false;
  if (pool.backend === 'kubernetes' && (task.runtimeNamespace || settings.kubeNamespace) !== (pool.namespace || settings.kubeNamespace)) return false;
  const defaults = settings.agentIsolation;
  if ((task.runtimeClass ?? defaults.runtimeClass) !== (pool.runtimeClass ?? defaults.runtimeClass)) return false;
  if (!withinResources(task.resources, pool.resources)) return false;
  if (Object.keys(task.podAdditions ?? {}).length > 0) return false;
  if (pool.backend === 'local') {
    if (Object.keys(task.secretEnv ?? {}).length > 0) return false;
    const asked = isolationOf(task, defaults);
    const given = isolationOf({ runtimeClass: pool.runtimeClass, network: null, security: null }, defaults);
    if (!isDeepStrictEqual(asked.network, given.network) || !isDeepStrictEqual(asked.security, given.security)) return false;
  }
  return true;
}

function withinResources(asked: { cpu: string; memory: string }, given: { cpu: string; memory: string }): boolean {
  const [cpu, poolCpu, memory, poolMemory] = [asked.cpu, given.cpu, asked.memory, given.memory].map(parseQuantity);
  return cpu !== null && poolCpu !== null && memory !== null && poolMemory !== null && cpu <= poolCpu && memory <= poolMemory;
}
