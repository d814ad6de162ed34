import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** One registry per process; in the `all` role both servers report into it by `role`. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const requests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by role, method, route and status.',
  labelNames: ['role', 'method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

const durations = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time to answer HTTP requests, by role, method, route and status.',
  labelNames: ['role', 'method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

/** Records an answered request under its route pattern (never the raw path, which holds ids). */
export function recordHttpRequest(role: string, method: string, route: string, status: number, seconds: number): void {
  const labels = { role, method, route, status: String(status) };
  requests.inc(labels);
  durations.observe(labels, seconds);
}
