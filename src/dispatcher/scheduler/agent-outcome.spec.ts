import { outcomeOf } from './agent-outcome';

const startedAt = new Date(1_000_000);

describe('what a runtime report means for a task', () => {
  it('waits while the agent runs or is still starting within the grace', () => {
    expect(outcomeOf({ phase: 'running' }, startedAt, 120, 1_000_500)).toBeNull();
    expect(outcomeOf({ phase: 'starting', reason: 'ImagePullBackOff' }, startedAt, 120, 1_000_000 + 119_000)).toBeNull();
    expect(outcomeOf({ phase: 'starting' }, startedAt, 120, 1_000_000 + 500_000)).toBeNull();
  });

  it('gives an unschedulable pod PENDING_GRACE_SECONDS, and pull errors START_GRACE_SECONDS', () => {
    const graces = { startSeconds: 120, pendingSeconds: 900 };
    const unschedulable = { phase: 'starting' as const, reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient cpu.' };
    expect(outcomeOf(unschedulable, startedAt, graces, 1_000_000 + 600_000)).toBeNull();
    expect(outcomeOf(unschedulable, startedAt, graces, 1_000_000 + 901_000)?.patch.errorMessage).toBe('The agent could not start within 900 s: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.');
    expect(outcomeOf({ phase: 'starting', reason: 'ErrImagePull' }, startedAt, graces, 1_000_000 + 121_000)?.status).toBe('failed');
  });

  it('fails an agent stuck starting past START_GRACE_SECONDS with the runtime reason', () => {
    const outcome = outcomeOf({ phase: 'starting', reason: 'ImagePullBackOff', message: 'no such image' }, startedAt, 120, 1_000_000 + 121_000);
    expect(outcome).toEqual({ status: 'failed', patch: { exitCode: -1, errorMessage: expect.stringContaining('ImagePullBackOff: no such image') } });
  });

  it('fails an agent that exited without checking back, with its exit code', () => {
    expect(outcomeOf({ phase: 'exited', exitCode: 3 }, startedAt, 120)).toEqual({
      status: 'failed', patch: { exitCode: 3, errorMessage: 'The agent exited with code 3 without checking back.' },
    });
  });

  it('times out at the runtime deadline and fails what could not start or is gone', () => {
    expect(outcomeOf({ phase: 'deadline_exceeded' }, startedAt, 120)?.status).toBe('timed_out');
    expect(outcomeOf({ phase: 'failed_to_start', reason: 'ENOENT', message: 'no node' }, startedAt, 120)?.patch.errorMessage).toContain('ENOENT: no node');
    expect(outcomeOf({ phase: 'gone', message: 'process 12 is gone' }, startedAt, 120)).toEqual({
      status: 'failed', patch: { exitCode: -1, errorMessage: 'process 12 is gone' },
    });
  });
});
