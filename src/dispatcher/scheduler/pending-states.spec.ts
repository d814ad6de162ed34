import { AgentState } from '../runtime/runtime';
import { PendingStates } from './pending-states';

const ended: AgentState[] = [
  { phase: 'exited', exitCode: 0 },
  { phase: 'failed_to_start', reason: 'ErrImagePull', message: 'not found' },
  { phase: 'deadline_exceeded' },
  { phase: 'gone' },
];
const live: AgentState[] = [{ phase: 'starting' }, { phase: 'starting', reason: 'ImagePullBackOff', message: 'not found' }, { phase: 'running' }];

describe('PendingStates', () => {
  it('keeps the latest state of each agent while it lives, in the order first reported', () => {
    const pending = new PendingStates();
    pending.put('a', { phase: 'starting' });
    pending.put('b', { phase: 'starting' });
    pending.put('a', { phase: 'running' });
    expect(pending.take()).toEqual([['a', { phase: 'running' }], ['b', { phase: 'starting' }]]);
    expect(pending.size).toBe(0);
  });

  it.each(ended.flatMap((end) => live.map((late) => [end, late] as const)))('keeps a pending %j over a later %j', (end, late) => {
    const pending = new PendingStates();
    pending.put('a', end);
    pending.put('a', late);
    expect(pending.take()).toEqual([['a', end]]);
  });

  it('takes a later end over an earlier one, and a late live state once the end was applied', () => {
    const pending = new PendingStates();
    pending.put('a', { phase: 'exited', exitCode: 1 });
    pending.put('a', { phase: 'gone' });
    expect(pending.take()).toEqual([['a', { phase: 'gone' }]]);
    pending.put('a', { phase: 'running' });
    expect(pending.take()).toEqual([['a', { phase: 'running' }]]);
  });
});
