import { Counter, Histogram } from 'prom-client';
import { roleRegistry } from '../../shared/metrics/metrics';

const registers = [roleRegistry('dispatcher')];

export const poolClaims = new Counter({
  name: 'dispatcher_pool_claims_total',
  help: 'Tasks given to an idle agent of a warm pool, by pool.',
  labelNames: ['pool'] as const,
  registers,
});

export const poolMisses = new Counter({
  name: 'dispatcher_pool_misses_total',
  help: 'Tasks that fitted a warm pool with no idle agent and started cold, by pool.',
  labelNames: ['pool'] as const,
  registers,
});

export const poolRefillDuration = new Histogram({
  name: 'dispatcher_pool_refill_seconds',
  help: 'Time to start one replacement agent of a warm pool (its runtime taking it), by pool.',
  labelNames: ['pool'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  registers,
});
