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

export const kubeApiInFlight = new Gauge({
  name: 'dispatcher_kube_api_requests_in_flight',
  help: 'Requests to the Kubernetes API server holding one of the places in flight (half of KUBE_API_BURST, at least 10): sent and unanswered, or about to be (watches and log follows take none).',
  registers,
});

export const kubeApiInFlightQueue = new Gauge({
  name: 'dispatcher_kube_api_in_flight_queue_depth',
  help: 'Requests to the Kubernetes API server waiting for a place in flight (half of KUBE_API_BURST, at least 10, are allowed at once).',
  registers,
});

interface Waiter {
  resolve: () => void;
  since: number;
}

/** A first-in, first-out queue of waiters that drops what it served without copying on each take. */
class WaiterQueue {
  private items: Waiter[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(waiter: Waiter): void {
    this.items.push(waiter);
  }

  shift(): Waiter {
    const waiter = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return waiter;
  }
}

/**
 * Client-side request rate limit, as client-go's QPS and burst (its flowcontrol token
 * bucket): `burst` requests may go at once, then `qps` a second. Requests over the rate
 * wait in arrival order; a wait is never a failure. One timer serves the whole queue,
 * whatever its length.
 *
 * Two lanes share the bucket. `urgent` is for calls someone is waiting on now (a warm pod
 * readied for its claim); such calls are served before any ordinary waiter, and a tenth of
 * the burst is kept for them: ordinary calls (Job submissions, a pool's refill) never take
 * the bucket below that reserve, so a refill of many pods cannot make a claim wait out its
 * whole queue. Over time both lanes together never exceed `qps`.
 */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();
  private readonly urgent = new WaiterQueue();
  private readonly ordinary = new WaiterQueue();
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now()). */
  private timerDue = Number.POSITIVE_INFINITY;
  /** Tokens only the urgent lane may take. */
  readonly reserve: number;

  constructor(readonly qps: number, readonly burst = Math.max(1, qps * 2)) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`a token bucket needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.tokens = burst;
    this.reserve = Math.floor(burst / 10);
  }

  /** Requests waiting for a token, in both lanes. */
  get waiting(): number {
    return this.urgent.length + this.ordinary.length;
  }

  /** Resolves when the caller may send one request; callers of a lane are served in order, urgent ones first. */
  take(lane: 'ordinary' | 'urgent' = 'ordinary'): Promise<void> {
    this.refill();
    const free = lane === 'urgent' ? this.urgent.length === 0 && this.tokens >= 1 : this.waiting === 0 && this.tokens >= 1 + this.reserve;
    if (free) {
      this.tokens -= 1;
      kubeApiLimiterWait.observe(0);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      (lane === 'urgent' ? this.urgent : this.ordinary).push({ resolve, since: performance.now() });
      kubeApiQueueDepth.inc();
      this.schedule();
    });
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  /** Tokens the next waiter needs: one for an urgent waiter, one above the reserve for an ordinary one. */
  private get needed(): number {
    return this.urgent.length > 0 ? 1 : 1 + this.reserve;
  }

  /**
   * Times the next release for what the first waiter needs. An urgent call that comes while
   * the timer waits for an ordinary one's tokens (one above the reserve: up to
   * `reserve / qps` away) brings it forward to its own single token.
   */
  private schedule(): void {
    if (this.waiting === 0) return;
    const ms = Math.max(1, Math.ceil(((this.needed - this.tokens) / this.qps) * 1000));
    const due = performance.now() + ms;
    if (this.timer) {
      if (due >= this.timerDue) return;
      clearTimeout(this.timer);
    }
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerDue = Number.POSITIVE_INFINITY;
      this.release();
    }, ms);
  }

  private release(): void {
    this.refill();
    const now = performance.now();
    while (this.waiting > 0 && this.tokens >= this.needed) {
      this.tokens -= 1;
      const waiter = (this.urgent.length > 0 ? this.urgent : this.ordinary).shift();
      kubeApiQueueDepth.dec();
      kubeApiLimiterWait.observe((now - waiter.since) / 1000);
      waiter.resolve();
    }
    this.schedule();
  }
}

/**
 * At most `max` requests to the API server sent and not yet answered (half of
 * KUBE_API_BURST). The token bucket times when a request is released, not when it arrives:
 * between the two are this process's event loop, new connections and the API server's own
 * queue, and a server that stalls for seconds would otherwise meet everything released
 * meanwhile as one bunch (client-node opens a connection per concurrent request, so nothing
 * else bounds them). With this bound a stalled server meets at most the requests in flight
 * and, once it answers them, as many again on the tokens the bucket saved meanwhile.
 *
 * Places are handed on in arrival order, urgent callers first, and a tenth of them is kept
 * for urgent callers, as the bucket's tokens are: ordinary calls piling up on a slow server
 * cannot make a claim wait for one of them to be answered.
 */
export class InFlightLimit {
  private active = 0;
  private readonly urgent = new WaiterQueue();
  private readonly ordinary = new WaiterQueue();
  /** Places only the urgent lane may take. */
  readonly reserve: number;

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new Error(`an in-flight limit needs max >= 1 (got ${max})`);
    this.reserve = Math.floor(max / 10);
  }

  /** Requests holding a place now. */
  get inFlight(): number {
    return this.active;
  }

  /** Requests waiting for a place, in both lanes. */
  get waiting(): number {
    return this.urgent.length + this.ordinary.length;
  }

  /** Runs `work` once a place is free, and frees it when `work` settles. */
  async run<T>(lane: 'ordinary' | 'urgent', work: () => Promise<T>): Promise<T> {
    const free = lane === 'urgent' ? this.urgent.length === 0 && this.active < this.max : this.waiting === 0 && this.active < this.max - this.reserve;
    if (free) {
      this.active += 1;
      kubeApiInFlight.inc();
    } else {
      // The place comes from `leave`, which hands it over without freeing it.
      await new Promise<void>((resolve) => {
        (lane === 'urgent' ? this.urgent : this.ordinary).push({ resolve, since: performance.now() });
        kubeApiInFlightQueue.inc();
      });
    }
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  private leave(): void {
    // An ordinary waiter takes over a place only below the urgent reserve.
    const next = this.urgent.length > 0 ? this.urgent : this.ordinary.length > 0 && this.active <= this.max - this.reserve ? this.ordinary : undefined;
    if (next) {
      kubeApiInFlightQueue.dec();
      next.shift().resolve();
      return;
    }
    this.active -= 1;
    kubeApiInFlight.dec();
  }
}
