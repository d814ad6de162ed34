import { Dispatcher } from '../dispatchers/dispatchers.entity';
import { ClaimCandidate, ClaimSlots } from './claim-plan';
import { fairnessGroupOf, postedConcurrency, workflowConcurrency } from './concurrency';
import { bounded, OTHER_GROUP, TOP_GROUPS } from './queue-gauges';

const now = new Date();
const dispatcher = (slug: string, capacity: number | null): Dispatcher => ({
  guid: `${slug}-guid`, name: slug, slug, endpointUrl: 'http://127.0.0.1:1', cloud: '', backends: ['local'], labels: {},
  heartbeatIntervalSeconds: 30, apiKeyEncrypted: null, boundTo: null, activeTasks: 0, capacity, warmPools: [], lastHeartbeatAt: now, reportedState: 'online',
  createdAt: now, updatedAt: now,
});
const candidate = (guid: string, key: string | null = null, limit: number | null = null): ClaimCandidate => ({
  guid, requirement: { runtimeType: 'local', labels: {}, slug: null }, concurrencyKey: key, concurrencyLimit: limit,
});

describe('ClaimSlots', () => {
  it('fills the freest dispatcher first and says why the rest wait', () => {
    const slots = new ClaimSlots([dispatcher('a', 2), dispatcher('b', 3)], new Map([['b-guid', 2]]), new Map(), now);
    slots.take(['1', '2', '3', '4'].map((guid) => candidate(guid)), 10);
    expect([...slots.plan.chosen]).toEqual([['1', 'a-guid'], ['2', 'a-guid'], ['3', 'b-guid']]);
    expect(slots.plan.waiting.get('4')).toBe('Every fitting dispatcher is busy (a 2/2, b 3/3); the task waits for a free slot.');
  });

  it('sends without a slot to a dispatcher that reports no capacity, and keeps key limits', () => {
    const slots = new ClaimSlots([dispatcher('a', null)], new Map(), new Map(), now);
    slots.learnKey('k', 1);
    slots.take([candidate('1', 'k', 2), candidate('2', 'k', 2), candidate('3')], 10);
    expect([...slots.plan.chosen]).toEqual([['1', null], ['3', null]]);
    expect(slots.plan.waiting.get('2')).toBe('concurrency limit of k reached (2/2)');
    expect(slots.plan.fullKeys).toEqual(new Set(['k']));
  });
});

describe('concurrency keys and fairness groups', () => {
  it('fills a workflow key from the payload, falling back to the workflow id', () => {
    const payload = { repository: { full_name: 'acme/app' } };
    expect(workflowConcurrency({ key: '{{payload.repository.full_name}}', limit: 2, strategy: 'queue' }, 'wf', payload)).toEqual({ key: 'acme/app', limit: 2, strategy: 'queue' });
    expect(workflowConcurrency({ key: '{{payload.missing}}', limit: 1, strategy: 'cancel_newest' }, 'wf', payload)?.key).toBe('wf');
    expect(workflowConcurrency({ limit: 1, strategy: 'queue' }, 'wf', payload)?.key).toBe('wf');
    expect(workflowConcurrency(null, 'wf', payload)).toBeNull();
  });

  it('gives a posted task without workflow and key no concurrency', () => {
    expect(postedConcurrency({ limit: 1, strategy: 'queue' }, undefined)).toBeNull();
    expect(postedConcurrency({ key: 'k', limit: 1, strategy: 'queue' }, undefined)?.key).toBe('k');
  });

  it('groups by key, else workflow, else creator', () => {
    expect(fairnessGroupOf({ key: 'k', limit: 1, strategy: 'queue' }, 'wf', 'operator:x')).toBe('key:k');
    expect(fairnessGroupOf(null, 'wf', 'operator:x')).toBe('workflow:wf');
    expect(fairnessGroupOf(null, null, 'operator:x')).toBe('creator:operator:x');
  });
});

describe('queue gauges', () => {
  it('names the largest groups and folds the rest into other', () => {
    const rows = Array.from({ length: TOP_GROUPS + 5 }, (_, i) => ({ fairness_group: `key:g${i}`, pending: 100 - i, oldest_wait: i }));
    const shown = bounded(rows);
    expect(shown.size).toBe(TOP_GROUPS + 1);
    expect(shown.get('key:g0')).toEqual({ pending: 100, oldest_wait: 0 });
    expect(shown.get(OTHER_GROUP)).toEqual({ pending: 90 + 89 + 88 + 87 + 86, oldest_wait: TOP_GROUPS + 4 });
  });
});
