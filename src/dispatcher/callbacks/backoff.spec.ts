import { createHmac } from 'node:crypto';
import { TaskEntity } from '../tasks/task.entity';
import { isRetryable, parseRetryAfter, retryDelayMs } from './backoff';
import { signCallbackBody } from '../../shared/task-protocol/callback-signature';
import { callbackBody, progressUrl } from './callback-body';

const finished = (fields: Partial<TaskEntity>) => Object.assign(new TaskEntity(), { exitCode: 0, resultKey: null, resultMetadata: null, errorMessage: null }, fields);

describe('callback retry rules', () => {
  it.each([[null], [408], [429], [500], [502], [503]])('retries %p', (status) => expect(isRetryable(status)).toBe(true));
  it.each([[400], [401], [403], [404], [409], [422]])('stops on %p', (status) => expect(isRetryable(status)).toBe(false));

  it('doubles from 1 s with jitter in the upper half, capped at 5 min', () => {
    expect(retryDelayMs(1, null, () => 1)).toBe(1000);
    expect(retryDelayMs(1, null, () => 0)).toBe(500);
    expect(retryDelayMs(3, null, () => 1)).toBe(4000);
    expect(retryDelayMs(30, null, () => 1)).toBe(300000);
  });

  it('honours Retry-After, within the cap', () => {
    expect(retryDelayMs(1, 7000, () => 1)).toBe(7000);
    expect(retryDelayMs(1, 10 * 60 * 1000, () => 1)).toBe(300000);
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter('soon')).toBeNull();
  });
});

describe('callback body', () => {
  it('reports a cancelled task as failed with reason cancelled', () => {
    expect(JSON.parse(callbackBody(finished({ status: 'cancelled', exitCode: -1 })))).toEqual({
      status: 'failed', exit_code: -1, result_key: '', result_metadata: { reason: 'cancelled' }, error_message: 'cancelled',
    });
  });

  it('carries the result of a completed task', () => {
    const body = callbackBody(finished({ status: 'completed', resultKey: 'results/t/out.json', resultMetadata: { n: 1 } }));
    expect(JSON.parse(body)).toEqual({ status: 'completed', exit_code: 0, result_key: 'results/t/out.json', result_metadata: { n: 1 }, error_message: '' });
  });

  it('signs the raw body', () => {
    expect(signCallbackBody('k', '{}')).toBe(`sha256=${createHmac('sha256', 'k').update('{}').digest('hex')}`);
  });

  it('derives the progress address from the callback address', () => {
    expect(progressUrl('http://c:8000/api/v1/tasks/abc/callback/', 'abc')).toBe('http://c:8000/api/v1/tasks/abc/progress/');
    expect(progressUrl('https://c/x/api/v1/tasks/abc/callback', 'abc')).toBe('https://c/x/api/v1/tasks/abc/progress/');
    expect(progressUrl('http://c:9/hook', 'abc')).toBe('http://c:9/api/v1/tasks/abc/progress/');
  });
});
