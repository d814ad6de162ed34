import { roleRegistry } from '../../shared/metrics/metrics';
import { TokenBucket } from './kubernetes-rate-limiter';

async function metric(name: string): Promise<number> {
  const line = (await roleRegistry('dispatcher').metrics()).split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

describe('TokenBucket (KUBE_API_QPS, KUBE_API_BURST)', () => {
  it('lets the burst go at once, then serves the rest at the rate, in arrival order', async () => {
    const bucket = new TokenBucket(50, 5);
    const startedAt = performance.now();
    const order: number[] = [];
    const at: number[] = [];
    const takes = Array.from({ length: 15 }, (_, i) => bucket.take().then(() => {
      order.push(i);
      at.push(performance.now() - startedAt);
    }));
    // The burst is served at once: before any timer can run (a waiter is served by a timer), not
    // within some wall-clock bound a loaded machine may stretch.
    await Promise.resolve();
    await Promise.resolve();
    expect(order).toEqual([0, 1, 2, 3, 4]);
    await Promise.all(takes);
    expect(order).toEqual([...Array(15).keys()]);
    // 10 more at 50 a second: the last about 200 ms in.
    expect(at[14]).toBeGreaterThanOrEqual(190);
    // Bounded well below what client-go's 5 a second would take (2 s), with room for a loaded machine.
    expect(at[14]).toBeLessThan(1_500);
  });

  it('shows its queue and the waits on /metrics', async () => {
    const waitsBefore = await metric('dispatcher_kube_api_limiter_wait_seconds_count');
    const bucket = new TokenBucket(20, 1);
    const takes = Array.from({ length: 4 }, () => bucket.take());
    expect(bucket.waiting).toBe(3);
    expect(await metric('dispatcher_kube_api_limiter_queue_depth')).toBe(3);
    await Promise.all(takes);
    expect(await metric('dispatcher_kube_api_limiter_queue_depth')).toBe(0);
    expect(await metric('dispatcher_kube_api_limiter_wait_seconds_count') - waitsBefore).toBe(4);
    const sum = await metric('dispatcher_kube_api_limiter_wait_seconds_sum');
    // Waits of about 50, 100 and 150 ms.
    expect(sum).toBeGreaterThanOrEqual(0.25);
  });

  it('serves urgent calls before waiting ordinary ones, and keeps a tenth of the burst for them', async () => {
    const bucket = new TokenBucket(20, 10);
    expect(bucket.reserve).toBe(1);
    const order: string[] = [];
    // Nine ordinary calls go at once; the tenth token is the urgent lane's.
    const ordinary = Array.from({ length: 12 }, (_, i) => bucket.take().then(() => order.push(`ordinary-${i}`)));
    await Promise.resolve();
    expect(order).toHaveLength(9);
    const urgentAt = performance.now();
    await bucket.take('urgent');
    order.push('urgent-0');
    expect(performance.now() - urgentAt).toBeLessThan(20);
    // Queued behind three ordinary waiters, an urgent call still goes first.
    const late = bucket.take('urgent').then(() => order.push('urgent-1'));
    await Promise.all([...ordinary, late]);
    expect(order.slice(9)).toEqual(['urgent-0', 'urgent-1', 'ordinary-9', 'ordinary-10', 'ordinary-11']);
  });

  it('refuses a rate or burst that could never serve a request', () => {
    expect(() => new TokenBucket(0, 10)).toThrow(/qps > 0/);
    expect(() => new TokenBucket(5, 0)).toThrow(/burst >= 1/);
  });
});
