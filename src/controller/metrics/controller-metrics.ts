import { Counter, Histogram } from 'prom-client';
import { roleRegistry } from '../../shared/metrics/metrics';

/**
 * The controller's counters and histograms: each replica counts what it did itself, and
 * Prometheus sums the replicas. Figures about the whole cluster (tasks by state, the oldest
 * pending task) are gauges read from the database at scrape time (`ControllerGauges`).
 */
const registers = [roleRegistry('controller')];

export const tasksFinished = new Counter({
  name: 'controller_tasks_finished_total',
  help: 'Controller tasks that reached a final state, by outcome (completed, failed, timed_out, cancelled).',
  labelNames: ['outcome'] as const,
  registers,
});

export const taskDispatchLatency = new Histogram({
  name: 'controller_task_dispatch_latency_seconds',
  help: 'Time from a task being stored to a dispatcher accepting it (pending to dispatched).',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
  registers,
});

export const webhookDeliveries = new Counter({
  name: 'controller_webhook_deliveries_total',
  help: 'Inbound webhook deliveries, by source and outcome (routed, ignored, duplicate, rejected, failed, challenge).',
  labelNames: ['source', 'outcome'] as const,
  registers,
});

/** Counts tasks that just moved to the final state `to`. */
export function countFinished(to: string, moved: number): void {
  if (moved > 0) tasksFinished.inc({ outcome: to }, moved);
}

export const taskRetries = new Counter({
  name: 'controller_task_retries_total',
  help: 'Task attempts that ended and were tried again, by reason (infra, timed_out, failed).',
  labelNames: ['reason'] as const,
  registers,
});

export const deadLetters = new Counter({
  name: 'controller_dead_letters_total',
  help: 'Tasks that ended failed or timed_out and will not be tried again (dead letters), by the reason of their last ending.',
  labelNames: ['reason'] as const,
  registers,
});

export const eventStreamsCut = new Counter({
  name: 'controller_event_streams_cut_total',
  help: 'Event streams ended because their client left more than STREAM_BUFFER_BYTES unsent (it resumes with Last-Event-ID).',
  registers,
});
