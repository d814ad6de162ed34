import { Counter, Histogram } from 'prom-client';
import { roleRegistry } from '../../shared/metrics/metrics';

/**
 * The dispatcher's counters and histograms: each replica counts what it did itself, and
 * Prometheus sums the replicas. Figures about the whole cluster (tasks by state, the
 * callback outbox) are gauges read from the database at scrape time (`DispatcherGauges`).
 */
const registers = [roleRegistry('dispatcher')];
const START_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const tasksFinished = new Counter({
  name: 'dispatcher_tasks_finished_total',
  help: 'Dispatcher tasks that reached a final state, by outcome (completed, failed, timed_out, cancelled).',
  labelNames: ['outcome'] as const,
  registers,
});

export const taskCheckinLatency = new Histogram({
  name: 'dispatcher_task_checkin_latency_seconds',
  help: 'Time from the dispatcher accepting a task to its agent checking in (dispatched to running), by runtime backend.',
  labelNames: ['backend'] as const,
  buckets: START_BUCKETS,
  registers,
});

export const runtimeStartDuration = new Histogram({
  name: 'dispatcher_runtime_start_duration_seconds',
  help: 'Time a runtime backend took to start an agent (create the Job, the container or the process), by backend.',
  labelNames: ['backend'] as const,
  buckets: START_BUCKETS,
  registers,
});

export const callbackAttempts = new Counter({
  name: 'dispatcher_callback_attempts_total',
  help: 'Attempts to deliver a final callback to the controller, by outcome (delivered, failed).',
  labelNames: ['outcome'] as const,
  registers,
});

export const callbackFailures = new Counter({
  name: 'dispatcher_callback_failures_total',
  help: 'Final callbacks given up: refused with a final 4xx, or still failing after CALLBACK_MAX_AGE_SECONDS.',
  registers,
});
