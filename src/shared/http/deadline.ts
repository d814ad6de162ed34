/**
 * Runs `work` with a signal that aborts, as `AbortSignal.timeout` does (a `TimeoutError`
 * DOMException), when `timeoutMs` pass first; the timer is cleared as soon as `work` settles.
 * `AbortSignal.timeout`'s own timer is never cleared: it fires after every call, answered or
 * not, and makes its DOMException and abort event for every signal not yet collected (1% of the
 * server's CPU over task lives, docs/performance.md). The whole exchange, the body read
 * included, belongs inside `work`.
 */
export async function withDeadline<T>(timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
  try {
    return await work(deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}
