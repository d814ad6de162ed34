import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export type MetricsRole = 'controller' | 'dispatcher';

/**
 * One registry per role: each role's port serves its own series only, so scraping both
 * ports of an `all` process counts nothing twice. The process's own series (memory, CPU,
 * event loop) are in a third registry, served by one port per process (see `processMetricsRole`).
 */
const registries: Record<MetricsRole, Registry> = { controller: new Registry(), dispatcher: new Registry() };
export const processRegistry = new Registry();
let processSeriesStarted = false;

/**
 * The process's own series (memory, CPU, event loop), once per process: the first role app
 * built starts them, later ones (the second role of `all`, a test's next app) find them there.
 * `eventLoopResolutionMs` is METRICS_EVENT_LOOP_RESOLUTION_MS: each sample of the loop's delay
 * is a timer firing, so prom-client's 10 ms default keeps an idle process waking 100 times a
 * second.
 */
export function collectProcessMetrics(eventLoopResolutionMs: number): void {
  if (processSeriesStarted) return;
  processSeriesStarted = true;
  collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: eventLoopResolutionMs });
  // Gauges that prom-client names with `_total`, which Prometheus keeps for counters
  // (promtool flags them); `nodejs_active_handles` etc. give the same figures by type.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    processRegistry.removeSingleMetric(name);
  }
}

export function roleRegistry(role: MetricsRole): Registry {
  return registries[role];
}

/** The role whose port serves the process series: the controller's, unless the process is a dispatcher alone. */
export function processMetricsRole(processRole: MetricsRole | 'all'): MetricsRole {
  return processRole === 'dispatcher' ? 'dispatcher' : 'controller';
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function httpSeries(role: MetricsRole) {
  const labelNames = ['role', 'method', 'route', 'status'] as const;
  return {
    requests: new Counter({
      name: 'http_requests_total',
      help: `HTTP requests the ${role} answered, by method, route and status.`,
      labelNames,
      registers: [registries[role]],
    }),
    durations: new Histogram({
      name: 'http_request_duration_seconds',
      help: `Time the ${role} took to answer HTTP requests, by method, route and status.`,
      labelNames,
      buckets: HTTP_BUCKETS,
      registers: [registries[role]],
    }),
  };
}

const http: Record<MetricsRole, ReturnType<typeof httpSeries>> = { controller: httpSeries('controller'), dispatcher: httpSeries('dispatcher') };

/** Records an answered request under its route pattern (never the raw path, which holds ids). */
export function recordHttpRequest(role: MetricsRole, method: string, route: string, status: number, seconds: number): void {
  const labels = { role, method, route, status: String(status) };
  http[role].requests.inc(labels);
  http[role].durations.observe(labels, seconds);
}
