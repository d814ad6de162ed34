import { roleRegistry } from '../../shared/metrics/metrics';
import { InFlightLimit, TokenBucket } from './kubernetes-rate-limiter';

async function metric(name: string): Promise<number> {
  const line = (await roleRegistry('dispatcher').metrics()).split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

/** Lets every settled take's continuation run; no timer runs meanwhile. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}

// The bucket's clock (performance.now) and its timer run on Jest's fake clock: what is
// checked is the schedule itself, to the millisecond, which a loaded machine's wall clock
// cannot stretch or shrink.
describe('TokenBucket (KUBE_API_QPS, KUBE_API_BURST)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lets the burst go at once, then serves the rest at the rate, in arrival order', async () => {
    const bucket = new TokenBucket(50, 5);
    const order: number[] = [];
    const at: number[] = [];
    const startedAt = performance.now();
    const takes = Array.from({ length: 15 }, (_, i) => bucket.take().then(() => {
      order.push(i);
      at.push(performance.now() - startedAt);
    }));
    await settle();
    expect(order).toEqual([0, 1, 2, 3, 4]);
    // 50 a second: one token each 20 ms, never sooner.
    await jest.advanceTimersByTimeAsync(19);
    expect(order).toHaveLength(5);
    await jest.advanceTimersByTimeAsync(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    await jest.advanceTimersByTimeAsync(180);
    await Promise.all(takes);
    expect(order).toEqual([...Array(15).keys()]);
    expect(at).toEqual([0, 0, 0, 0, 0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
    expect(bucket.waiting).toBe(0);
  });

  it('brings the release forward for an urgent call that comes while an ordinary one waits for the reserve', async () => {
    // 50 a second, a reserve of 10: an ordinary call waits for 11 tokens (220 ms from empty), an urgent one for 1 (20 ms).
    const bucket = new TokenBucket(50, 100);
    await Promise.all([...Array.from({ length: 90 }, () => bucket.take()), ...Array.from({ length: 10 }, () => bucket.take('urgent'))]);
    const startedAt = performance.now();
    const served: [string, number][] = [];
    const ordinary = bucket.take().then(() => served.push(['ordinary', performance.now() - startedAt]));
    await jest.advanceTimersByTimeAsync(5);
    const urgent = bucket.take('urgent').then(() => served.push(['urgent', performance.now() - startedAt]));
    await jest.advanceTimersByTimeAsync(300);
    await Promise.all([ordinary, urgent]);
    expect(served).toEqual([['urgent', 20], ['ordinary', 240]]);
  });

  it('shows its queue and the waits on /metrics', async () => {
    const depthBefore = await metric('dispatcher_kube_api_limiter_queue_depth');
    const waitsBefore = await metric('dispatcher_kube_api_limiter_wait_seconds_count');
    const sumBefore = await metric('dispatcher_kube_api_limiter_wait_seconds_sum');
    const bucket = new TokenBucket(20, 1);
    const takes = Array.from({ length: 4 }, () => bucket.take());
    expect(bucket.waiting).toBe(3);
    expect(await metric('dispatcher_kube_api_limiter_queue_depth') - depthBefore).toBe(3);
    await jest.advanceTimersByTimeAsync(150);
    await Promise.all(takes);
    expect(await metric('dispatcher_kube_api_limiter_queue_depth') - depthBefore).toBe(0);
    expect(await metric('dispatcher_kube_api_limiter_wait_seconds_count') - waitsBefore).toBe(4);
    // Waits of 0, 50, 100 and 150 ms.
    expect(await metric('dispatcher_kube_api_limiter_wait_seconds_sum') - sumBefore).toBeCloseTo(0.3, 6);
  });

  it('serves urgent calls before waiting ordinary ones, and keeps a tenth of the burst for them', async () => {
    const bucket = new TokenBucket(20, 10);
    expect(bucket.reserve).toBe(1);
    const order: string[] = [];
    // Nine ordinary calls go at once; the tenth token is the urgent lane's.
    const ordinary = Array.from({ length: 12 }, (_, i) => bucket.take().then(() => order.push(`ordinary-${i}`)));
    await settle();
    expect(order).toHaveLength(9);
    // The reserved token: an urgent call goes at once while three ordinary calls wait.
    const urgent = bucket.take('urgent').then(() => order.push('urgent-0'));
    await settle();
    expect(order.slice(9)).toEqual(['urgent-0']);
    // Queued behind three ordinary waiters, an urgent call still goes first.
    const late = bucket.take('urgent').then(() => order.push('urgent-1'));
    await jest.advanceTimersByTimeAsync(50);
    expect(order.slice(9)).toEqual(['urgent-0', 'urgent-1']);
    await jest.advanceTimersByTimeAsync(1_000);
    await Promise.all([...ordinary, urgent, late]);
    expect(order.slice(9)).toEqual(['urgent-0', 'urgent-1', 'ordinary-9', 'ordinary-10', 'ordinary-11']);
  });

  it('refuses a rate or burst that could never serve a request', () => {
    expect(() => new TokenBucket(0, 10)).toThrow(/qps > 0/);
    expect(() => new TokenBucket(5, 0)).toThrow(/burst >= 1/);
  });
});

/** A request the test answers when it chooses. */
function pending(log: string[], name: string): { work: () => Promise<string>; answer: () => void } {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  return {
    work: async () => {
      log.push(`sent ${name}`);
      await answered;
      return name;
    },
    answer: () => answer(),
  };
}

describe('InFlightLimit (KUBE_API_BURST requests unanswered at once)', () => {
  it('sends no more than its limit before answers come, then one per answer, in arrival order', async () => {
    const limit = new InFlightLimit(3);
    const log: string[] = [];
    const requests = Array.from({ length: 6 }, (_, i) => pending(log, `r${i}`));
    const results = requests.map((r) => limit.run('ordinary', r.work));
    await settle();
    expect(log).toEqual(['sent r0', 'sent r1', 'sent r2']);
    expect([limit.inFlight, limit.waiting]).toEqual([3, 3]);
    requests[1].answer();
    await settle();
    expect(log).toEqual(['sent r0', 'sent r1', 'sent r2', 'sent r3']);
    expect([limit.inFlight, limit.waiting]).toEqual([3, 2]);
    for (const r of requests) r.answer();
    expect(await Promise.all(results)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
    expect([limit.inFlight, limit.waiting]).toEqual([0, 0]);
  });

  it('frees the place of a request that failed', async () => {
    const limit = new InFlightLimit(1);
    await expect(limit.run('ordinary', () => Promise.reject(new Error('409 Conflict')))).rejects.toThrow('409 Conflict');
    await expect(limit.run('ordinary', async () => 'next')).resolves.toBe('next');
    expect(limit.inFlight).toBe(0);
  });

  it('keeps a tenth of its places for urgent calls, and hands a freed place to an urgent waiter first', async () => {
    const limit = new InFlightLimit(10);
    expect(limit.reserve).toBe(1);
    const log: string[] = [];
    const ordinary = Array.from({ length: 11 }, (_, i) => pending(log, `ordinary-${i}`));
    const ordinaryResults = ordinary.map((r) => limit.run('ordinary', r.work));
    await settle();
    // Nine ordinary calls go; the tenth place is the urgent lane's.
    expect(log).toHaveLength(9);
    const urgent = [pending(log, 'urgent-0'), pending(log, 'urgent-1')];
    const urgentResults = urgent.map((r) => limit.run('urgent', r.work));
    await settle();
    expect(log.slice(9)).toEqual(['sent urgent-0']);
    // The next place freed goes to the urgent waiter, though two ordinary ones came before it.
    ordinary[0].answer();
    await settle();
    expect(log.slice(9)).toEqual(['sent urgent-0', 'sent urgent-1']);
    // With the urgent lane using the reserve, a freed place is not handed to an ordinary waiter.
    ordinary[1].answer();
    await settle();
    expect(log).toHaveLength(11);
    expect(limit.inFlight).toBe(9);
    ordinary[2].answer();
    await settle();
    expect(log.slice(11)).toEqual(['sent ordinary-9']);
    for (const r of [...ordinary, ...urgent]) r.answer();
    await Promise.all([...ordinaryResults, ...urgentResults]);
    expect(log.slice(11)).toEqual(['sent ordinary-9', 'sent ordinary-10']);
    expect([limit.inFlight, limit.waiting]).toEqual([0, 0]);
  });

  it('shows the requests in flight and those waiting for a place on /metrics', async () => {
    const before = await metric('dispatcher_kube_api_requests_in_flight');
    const queuedBefore = await metric('dispatcher_kube_api_in_flight_queue_depth');
    const limit = new InFlightLimit(2);
    const requests = Array.from({ length: 5 }, (_, i) => pending([], `r${i}`));
    const results = requests.map((r) => limit.run('ordinary', r.work));
    await settle();
    expect(await metric('dispatcher_kube_api_requests_in_flight') - before).toBe(2);
    expect(await metric('dispatcher_kube_api_in_flight_queue_depth') - queuedBefore).toBe(3);
    for (const r of requests) r.answer();
    await Promise.all(results);
    expect(await metric('dispatcher_kube_api_requests_in_flight') - before).toBe(0);
    expect(await metric('dispatcher_kube_api_in_flight_queue_depth') - queuedBefore).toBe(0);
  });

  it('refuses a limit that could never send a request', () => {
    expect(() => new InFlightLimit(0)).toThrow(/max >= 1/);
  });
});
