import { canTransition, FINAL_STATUSES, isFinal, sourcesOf, TASK_STATUSES, TaskStatus } from './task-state';

const ALLOWED: [TaskStatus, TaskStatus][] = [
  ['pending', 'starting'],
  ['pending', 'failed'],
  ['pending', 'cancelled'],
  ['starting', 'running'],
  ['starting', 'completed'],
  ['starting', 'failed'],
  ['starting', 'timed_out'],
  ['starting', 'cancelled'],
  ['running', 'completed'],
  ['running', 'failed'],
  ['running', 'timed_out'],
  ['running', 'cancelled'],
];

const allPairs = TASK_STATUSES.flatMap((from) => TASK_STATUSES.map((to) => [from, to] as [TaskStatus, TaskStatus]));
const isAllowed = ([from, to]: [TaskStatus, TaskStatus]) => ALLOWED.some(([a, b]) => a === from && b === to);

describe('task state machine', () => {
  it.each(ALLOWED)('allows %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it.each(allPairs.filter((pair) => !isAllowed(pair)))('refuses %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
  });

  it.each(FINAL_STATUSES.map((status) => [status]))('%s is final and never changes', (status) => {
    expect(isFinal(status)).toBe(true);
    expect(TASK_STATUSES.filter((to) => canTransition(status, to))).toEqual([]);
  });

  it.each([['pending'], ['starting'], ['running']] as [TaskStatus][])('%s is not final', (status) => {
    expect(isFinal(status)).toBe(false);
  });

  it('names the source states of each move for the conditional update', () => {
    expect(sourcesOf('starting')).toEqual(['pending']);
    expect(sourcesOf('running')).toEqual(['starting']);
    expect(sourcesOf('timed_out')).toEqual(['starting', 'running']);
    expect(sourcesOf('cancelled')).toEqual(['pending', 'starting', 'running']);
    expect(sourcesOf('pending')).toEqual([]);
  });
});
