import { isDeepStrictEqual } from 'node:util';
import { AgentIsolationDefaults } from '../../shared/config/isolation-config';
import { WarmPool } from '../../shared/config/warm-pools-settings';
import { parseQuantity } from '../../shared/validation/quantities';
import { isolationOf } from '../scheduler/agent-spec';
import { TaskEntity } from '../tasks/task.entity';
import { poolIsolationOf } from './pool-agent-spec';

export type FitTask = Pick<TaskEntity, 'agentImage' | 'runtimeType' | 'runtimeNamespace' | 'resources' | 'runtimeClass' | 'network' | 'security' | 'secretEnv' | 'podAdditions'>;

export interface FitSettings {
  kubeNamespace: string;
  agentIsolation: AgentIsolationDefaults;
}

/**
 * The pool whose idle agent may take the task, or null (the task starts cold). A task fits
 * when its image, backend (and namespace), runtime class are the pool's and its resources no
 * more than the pool's. What a running agent can no longer change starts cold as well: secret
 * values, security and pod additions are fixed when it starts on every engine, and so is the
 * network of a local container or process; on Kubernetes the task's egress policy is added at
 * claim, so any egress but `none` fits there.
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
  if (Object.keys(task.podAdditions ?? {}).length > 0 || Object.keys(task.secretEnv ?? {}).length > 0) return false;
  const asked = isolationOf(task, defaults);
  const given = poolIsolationOf(pool, defaults);
  if (!isDeepStrictEqual(asked.security, given.security)) return false;
  // A warm pod's egress grows to the task's at claim (policies add up), never shrinks to none.
  if (pool.backend === 'kubernetes') return asked.network.egress !== 'none';
  return isDeepStrictEqual(asked.network, given.network);
}

function withinResources(asked: { cpu: string; memory: string }, given: { cpu: string; memory: string }): boolean {
  const [cpu, poolCpu, memory, poolMemory] = [asked.cpu, given.cpu, asked.memory, given.memory].map(parseQuantity);
  return cpu !== null && poolCpu !== null && memory !== null && poolMemory !== null && cpu <= poolCpu && memory <= poolMemory;
}
