import { failureOf } from './json-post';
import { withDeadline } from './deadline';

const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

describe('withDeadline', () => {
  it('answers what the work answers and leaves no timer behind', async () => {
    const before = timers();
    let seen: AbortSignal | undefined;
    await expect(withDeadline(60_000, async (signal) => ((seen = signal), 'answered'))).resolves.toBe('answered');
    expect(timers()).toBe(before);
    expect(seen?.aborted).toBe(false);
  });

  it('passes a failure of the work through and clears its timer as well', async () => {
    const before = timers();
    await expect(withDeadline(60_000, async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(timers()).toBe(before);
  });

  it('aborts the signal with a TimeoutError when the time passes first, as AbortSignal.timeout does', async () => {
    const started = performance.now();
    const error = await withDeadline(50, (signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)))).catch((failure: unknown) => failure);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(error).toBeInstanceOf(DOMException);
    expect(failureOf(error)).toBe('TimeoutError');
  });
});
