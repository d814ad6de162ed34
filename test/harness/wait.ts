/**
 * Polls `probe` until it gives a truthy value and returns that value; past `timeoutMs`
 * it fails, naming `what` it waited for (a function is asked then, so it can tell what it saw).
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
  what: string | (() => string) = 'a condition',
  intervalMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`Timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Reads until `done` holds for what was read, or `timeoutMs` passed, and returns the last
 * value read either way: the assertion that follows shows what was seen when it was not.
 */
export async function readUntil<T>(read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
