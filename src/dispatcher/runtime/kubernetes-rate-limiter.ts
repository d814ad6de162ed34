import { Gauge, Histogram } from 'prom-client';
import { roleRegistry } from '../../shared/metrics/metrics';

const registers = [roleRegistry('dispatcher')];

export const kubeApiQueueDepth = new Gauge({
  name: 'dispatcher_kube_api_limiter_queue_depth',
  help: 'Requests to the Kubernetes API server waiting for a token of the client-side rate limiter (KUBE_API_QPS, KUBE_API_BURST).',
  registers,
});

export const kubeApiLimiterWait = new Histogram({
  name: 'dispatcher_kube_api_limiter_wait_seconds',
  help: 'Time each request to the Kubernetes API server waited for a token of the client-side rate limiter (0 when one was free).',
  buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  registers,
});

interface Waiter {
  resolve: () => void;
  since: number;
}

/**
 * Client-side request rate limit, as client-go's QPS and burst (its flowcontrol token
 * bucket): `burst` requests may go at once, then `qps` a second. Requests over the rate
 * wait in arrival order; a wait is never a failure. One timer serves the whole queue,
 * whatever its length.
 */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();
  private queue: Waiter[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly qps: number, readonly burst = Math.max(1, qps * 2)) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`a token bucket needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.tokens = burst;
  }

  /** Requests waiting for a token. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Resolves when the caller may send one request; callers are served in order. */
  take(): Promise<void> {
    this.refill();
    if (this.waiting === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      kubeApiLimiterWait.observe(0);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.queue.push({ resolve, since: performance.now() });
      kubeApiQueueDepth.inc();
      this.schedule();
    });
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  private schedule(): void {
    if (this.timer || this.waiting === 0) return;
    const ms = Math.max(1, Math.ceil(((1 - this.tokens) / this.qps) * 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.release();
    }, ms);
  }

  private release(): void {
    this.refill();
    const now = performance.now();
    while (this.waiting > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      const waiter = this.queue[this.head++];
      kubeApiQueueDepth.dec();
      kubeApiLimiterWait.observe((now - waiter.since) / 1000);
      waiter.resolve();
    }
    if (this.waiting === 0) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.schedule();
  }
}
