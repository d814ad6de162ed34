import { Counter, Histogram } from 'prom-client';
import { isDependencyDown } from '../../shared/errors/dependency-down';
import { roleRegistry } from '../../shared/metrics/metrics';

/** A start that meets an outage waits 1 s, doubling up to 30 s, for as long as its task's time-out allows. */
export const START_RETRY_BASE_MS = 1000;
export const START_RETRY_MAX_MS = 30_000;

export type StartOutage = 'runtime' | 'database';

const registers = [roleRegistry('dispatcher')];

export const startRetries = new Counter({
  name: 'dispatcher_start_retries_total',
  help: 'Steps of agent starts tried again after an outage, by what was out (runtime: its API server or engine; database).',
  labelNames: ['cause'] as const,
  registers,
});

export const startOutageWait = new Histogram({
  name: 'dispatcher_start_outage_wait_seconds',
  help: 'Time agent starts spent waiting out outages before they went through (starts that met none are not observed), by cause.',
  labelNames: ['cause'] as const,
  buckets: [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers,
});

/** PostgreSQL's answers that mean "not now" rather than "wrong": a statement or lock wait cancelled, a lost serialisation race. */
const BUSY_CODES = new Set(['57014', '55P03', '40001', '40P01']);

/**
 * An error a start may wait out: the database unreachable, restarting, its connection killed
 * (pg_terminate_backend) or its pool exhausted, or a statement cancelled by its time-out.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (isDependencyDown(error)) return true;
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  const { code, driverError, cause } = error as { code?: unknown; driverError?: unknown; cause?: unknown };
  if (typeof code === 'string' && BUSY_CODES.has(code)) return true;
  return [driverError, cause].some((inner) => isDatabaseUnavailable(inner, depth + 1));
}

export function startRetryDelayMs(attempt: number): number {
  return Math.min(START_RETRY_MAX_MS, START_RETRY_BASE_MS * 2 ** Math.min(attempt, 10));
}
