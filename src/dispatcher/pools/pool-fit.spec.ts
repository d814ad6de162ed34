import { WarmPool } from '../../shared/config/warm-pools-settings';
import { loadConfig } from '../../shared/config/config';
import { FitTask, fittingPool } from './pool-fit';

const secrets = { API_TOKEN: 't', SECRET_KEY: 's', CALLBACK_SIGNING_KEY: 'c', DISPATCHER_API_KEY: 'd', API_KEY: 'k', AGENT_KEY: 'a' };

const settings = { kubeNamespace: 'agents', agentIsolation: loadConfig({ ...secrets }).agentIsolation };

function makePool(overrides: Partial<WarmPool> = {}): WarmPool {
  return { name: 'echo', image: 'agents/echo:1', backend: 'local', namespace: '', size: 2, resources: { cpu: '1', memory: '1Gi' }, runtimeClass: null, ...overrides };
}

function makeTask(overrides: Partial<FitTask> = {}): FitTask {
  return {
    agentImage: 'agents/echo:1', runtimeType: 'local', runtimeNamespace: '', resources: { cpu: '500m', memory: '512Mi' },
    runtimeClass: null, network: null, security: null, secretEnv: {}, podAdditions: {}, ...overrides,
  };
}

describe('which pool a task fits', () => {
  it('fits on the same image and backend with resources no more than the pool gives', () => {
    const pool = makePool();
    expect(fittingPool(makeTask(), [pool], settings)).toBe(pool);
    expect(fittingPool(makeTask({ resources: { cpu: '1000m', memory: '1024Mi' } }), [pool], settings)).toBe(pool);
  });

  it('starts cold on another image, backend, more resources, an empty pool', () => {
    const pools = [makePool()];
    expect(fittingPool(makeTask({ agentImage: 'agents/echo:2' }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ runtimeType: 'kubernetes' }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ resources: { cpu: '1500m', memory: '512Mi' } }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ resources: { cpu: '1', memory: '2Gi' } }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask(), [makePool({ size: 0 })], settings)).toBeNull();
  });

  it('asks the runtime class and, on Kubernetes, the namespace to be the pool\'s', () => {
    const gvisor = makePool({ runtimeClass: 'gvisor' });
    expect(fittingPool(makeTask(), [gvisor], settings)).toBeNull();
    expect(fittingPool(makeTask({ runtimeClass: 'gvisor' }), [gvisor], settings)).toBe(gvisor);
    const kube = makePool({ backend: 'kubernetes', namespace: '' });
    expect(fittingPool(makeTask({ runtimeType: 'kubernetes', runtimeNamespace: 'agents' }), [kube], settings)).toBe(kube);
    expect(fittingPool(makeTask({ runtimeType: 'kubernetes', runtimeNamespace: 'other' }), [kube], settings)).toBeNull();
  });

  it('starts cold what a running local agent cannot take on: secrets, another egress or security, pod additions', () => {
    const pools = [makePool()];
    expect(fittingPool(makeTask({ secretEnv: { TOKEN: 'forge/token' } }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ network: { egress: 'open' } }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ network: { egress: 'dispatcher' } }), pools, settings)).toBe(pools[0]);
    expect(fittingPool(makeTask({ security: { read_only_root_filesystem: false } }), pools, settings)).toBeNull();
    expect(fittingPool(makeTask({ podAdditions: { labels: { team: 'a' } } }), pools, settings)).toBeNull();
  });
});
