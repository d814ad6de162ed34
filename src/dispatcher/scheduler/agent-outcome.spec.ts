import { outcomeOf } from './agent-outcome';

const startedAt = new Date(1_000_000);

describe('what a runtime report means for a task', () => {
  it('waits while the agent runs or is still starting within the grace', () => {
    expect(outcomeOf({ phase: 'running' }, startedAt, 120, 1_000_500)).toBeNull();
    expect(outcomeOf({ phase: 'starting', reason: 'ImagePullBackOff' }, startedAt, 120, 1_000_000 + 119_000)).toBeNull();
    expect(outcomeOf({ phase: 'starting' }, startedAt, 120, 1_000_000 + 500_000)).toBeNull();
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
