import { canTransition, decideCallback, finalStatusOfCallback, isFinal, statusesBefore } from './task-state';
import { TASK_STATUSES, TaskStatus } from './tasks.entity';

describe('task state machine', () => {
  it.each([
    ['pending', 'dispatched'],
    ['dispatched', 'running'],
    ['running', 'completed'],
    ['running', 'failed'],
    ['running', 'timed_out'],
    ['running', 'cancelled'],
    ['dispatched', 'completed'],
    ['pending', 'cancelled'],
  ] as [TaskStatus, TaskStatus][])('allows %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it.each([
    ['running', 'dispatched'],
    ['running', 'pending'],
    ['dispatched', 'pending'],
    ['running', 'running'],
  ] as [TaskStatus, TaskStatus][])('refuses %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
  });

  it('never leaves a final state', () => {
    for (const from of ['completed', 'failed', 'timed_out', 'cancelled'] as TaskStatus[]) {
      expect(isFinal(from)).toBe(true);
      for (const to of TASK_STATUSES) expect(canTransition(from, to)).toBe(false);
    }
  });

  it('guards each move with the states it may come from', () => {
    expect(statusesBefore('running').sort()).toEqual(['dispatched', 'pending']);
    expect(statusesBefore('completed').sort()).toEqual(['dispatched', 'pending', 'running']);
  });
});

describe('callbacks', () => {
  it('reads failed + reason cancelled as cancelled only after the controller asked for it', () => {
    expect(finalStatusOfCallback('failed', { reason: 'cancelled' }, true)).toBe('cancelled');
    expect(finalStatusOfCallback('failed', { reason: 'cancelled' }, false)).toBe('failed');
    expect(finalStatusOfCallback('failed', { reason: 'oom' }, true)).toBe('failed');
    expect(finalStatusOfCallback('completed', { reason: 'cancelled' }, true)).toBe('completed');
    expect(finalStatusOfCallback('timed_out', null, false)).toBe('timed_out');
  });

  it('applies a final status to an open task', () => {
    expect(decideCallback('running', 'completed')).toEqual({ kind: 'apply', to: 'completed' });
    expect(decideCallback('dispatched', 'failed')).toEqual({ kind: 'apply', to: 'failed' });
  });

  it('calls the same final status again a duplicate, and another one a conflict', () => {
    expect(decideCallback('completed', 'completed')).toEqual({ kind: 'duplicate' });
    expect(decideCallback('completed', 'failed')).toEqual({ kind: 'conflict' });
    expect(decideCallback('timed_out', 'completed')).toEqual({ kind: 'conflict' });
  });
});
