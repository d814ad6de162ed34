import { backoffCeilingSeconds, backoffSeconds, classifyEnding, decideRetry, DEFAULT_RETRY_POLICY, policyOf } from './retry-policy';

describe('retry policy', () => {
  const policy = policyOf({ max_attempts: 5, backoff_seconds: 10, max_backoff_seconds: 60, on: ['infra', 'timed_out'] });

  it('fills what a policy leaves out from the default, and the default retries infra endings three times', () => {
    expect(policyOf(null)).toEqual({ max_attempts: 3, backoff_seconds: 10, max_backoff_seconds: 600, on: ['infra'] });
    expect(policyOf({ max_attempts: 1 })).toEqual({ ...DEFAULT_RETRY_POLICY, max_attempts: 1 });
  });

  it('doubles the backoff ceiling per attempt up to its cap, and jitters fully below it', () => {
    expect([1, 2, 3, 4, 5].map((ended) => backoffCeilingSeconds(policy, ended))).toEqual([10, 20, 40, 60, 60]);
    expect(backoffSeconds(policy, 3, () => 0)).toBe(0);
    expect(backoffSeconds(policy, 3, () => 0.5)).toBe(20);
    expect(backoffSeconds(policy, 3, () => 0.999)).toBeCloseTo(39.96);
  });

  it.each([
    ['The agent could not be started: spawn /nonexistent/agent ENOENT', 'infra'],
    ['The agent could not start within 120 s: ErrImagePull: pull access denied', 'infra'],
    ['The agent could not start: FailedCreate: exceeded quota', 'infra'],
    ['The agent is gone from the runtime and never checked back.', 'infra'],
    ['The dispatcher replica "d-1" that ran this agent on its host stopped answering (last heartbeat x); the agent\'s fate is unknown.', 'infra'],
    ['The agent exited with code -1 without checking back (Evicted: The node was low on memory).', 'infra'],
    ['The agent exited with code 2 without checking back.', 'failed'],
    ['The agent reported a failure.', 'failed'],
  ])('classifies a failed callback saying "%s" as %s', (errorMessage, reason) => {
    expect(classifyEnding({ status: 'failed', source: 'callback', errorMessage })).toBe(reason);
  });

  it('classifies a refusal by every dispatcher as infra, the watchdog\'s and a reported time-out as timed_out', () => {
    expect(classifyEnding({ status: 'failed', source: 'refused', errorMessage: 'no command is mapped' })).toBe('infra');
    expect(classifyEnding({ status: 'timed_out', source: 'watchdog' })).toBe('timed_out');
    expect(classifyEnding({ status: 'timed_out', source: 'callback', errorMessage: 'The task did not finish within 60 s.' })).toBe('timed_out');
  });

  it('retries only listed reasons, while attempts are left, and never a task asked to cancel', () => {
    expect(decideRetry(policy, 1, 'infra', false, () => 1)).toEqual({ retry: true, reason: 'infra', delaySeconds: 10 });
    expect(decideRetry(policy, 4, 'timed_out', false, () => 1)).toEqual({ retry: true, reason: 'timed_out', delaySeconds: 60 });
    expect(decideRetry(policy, 5, 'infra', false)).toEqual({ retry: false, reason: 'infra' });
    expect(decideRetry(policy, 1, 'failed', false)).toEqual({ retry: false, reason: 'failed' });
    expect(decideRetry(policy, 1, 'infra', true)).toEqual({ retry: false, reason: 'infra' });
    expect(decideRetry(policyOf({ max_attempts: 1 }), 1, 'infra', false)).toEqual({ retry: false, reason: 'infra' });
  });
});
