import { describeMissingDispatcher, DispatcherPool } from './dispatcher-selection';
import { Dispatcher } from './dispatchers.entity';

const now = new Date('2026-01-01T12:00:00Z');

function makeDispatcher(name: string, fields: Partial<Dispatcher> = {}): Dispatcher {
  return {
    guid: `guid-${name}`, name, slug: name, endpointUrl: `http://${name}`, cloud: '', backends: ['local'], labels: {},
    heartbeatIntervalSeconds: 30, apiKeyEncrypted: null, boundTo: null, activeTasks: 0, capacity: null, warmPools: [], lastHeartbeatAt: now, reportedState: 'online',
    createdAt: now, updatedAt: now, ...fields,
  };
}

const local = { runtimeType: 'local', labels: {}, slug: null };

describe('DispatcherPool', () => {
  it('picks online dispatchers with the runtime, every label and the slug asked for', () => {
    const pool = new DispatcherPool([
      makeDispatcher('silent', { lastHeartbeatAt: new Date(now.getTime() - 61_000) }),
      makeDispatcher('k8s', { backends: ['kubernetes'] }),
      makeDispatcher('eu', { labels: { zone: 'eu', gpu: 'yes' } }),
      makeDispatcher('us', { labels: { zone: 'us' } }),
    ], new Map(), now);
    expect(pool.pick(local)?.name).toBe('eu');
    expect(pool.pick({ ...local, labels: { zone: 'us' } })?.name).toBe('us');
    expect(pool.pick({ ...local, runtimeType: 'kubernetes' })?.name).toBe('k8s');
    expect(pool.pick({ ...local, slug: 'us' })?.name).toBe('us');
    expect(pool.pick({ ...local, slug: 'silent' })).toBeNull();
    expect(pool.pick({ ...local, runtimeType: 'nomad' })).toBeNull();
  });

  it('ranks by the larger of the reported and the counted load, and spreads one round', () => {
    const pool = new DispatcherPool(
      [makeDispatcher('a', { activeTasks: 5 }), makeDispatcher('b', { activeTasks: 0 }), makeDispatcher('c')],
      new Map([['guid-b', 3]]),
      now,
    );
    const picks: string[] = [];
    for (let i = 0; i < 6; i++) {
      const chosen = pool.pick(local)!;
      pool.took(chosen.guid);
      picks.push(chosen.name);
    }
    // c starts idle, b has 3 open tasks counted, a reported 5.
    expect(picks).toEqual(['c', 'c', 'c', 'b', 'c', 'b']);
  });

  it('offers a task to each dispatcher once, for failover', () => {
    const pool = new DispatcherPool([makeDispatcher('a'), makeDispatcher('b')], new Map(), now);
    expect(pool.pick(local, new Set(['guid-a']))?.name).toBe('b');
    expect(pool.pick(local, new Set(['guid-a', 'guid-b']))).toBeNull();
  });

  it('says what a task that found none waits for', () => {
    expect(describeMissingDispatcher({ runtimeType: 'kubernetes', labels: { zone: 'eu' }, slug: 'gpu' })).toBe(
      'No online dispatcher offers the runtime "kubernetes" with labels zone=eu under the slug "gpu"; the task waits for one.',
    );
  });
});
