// One clock for every process of a benchmark run. `performance.timeOrigin + performance.now()`
// is not one: timeOrigin is the wall clock read once when a process starts, and the wall clock is
// slewed against the monotonic clock that performance.now() counts (by 64 ppm on the machine this
// was found on: 2 ms in 30 s), so a bench process and an agent started two minutes after it
// disagree by several milliseconds, about a stage's size. CLOCK_MONOTONIC (process.hrtime) is
// the kernel's, one for the whole machine.

/** Milliseconds on the machine's monotonic clock. */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** When this process began, on the same clock. */
export const processStartMs = () => monotonicMs() - performance.now();

/**
 * The wall clock (what PostgreSQL's now() stamps) minus the monotonic one, as it is now: a wall
 * time minus this is a time on the monotonic clock. Date.now() gives whole milliseconds, floored,
 * so the best of 2 ms of readings is within a few microseconds of the offset.
 */
export function wallMinusMonotonicMs() {
  let best = -Infinity;
  const until = monotonicMs() + 2;
  for (let reading = monotonicMs(); reading < until; reading = monotonicMs()) best = Math.max(best, Date.now() - reading);
  return best;
}
