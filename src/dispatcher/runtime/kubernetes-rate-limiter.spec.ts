import { roleRegistry } from '../../shared/metrics/metrics';
import { TokenBucket } from './kubernetes-rate-limiter';

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
