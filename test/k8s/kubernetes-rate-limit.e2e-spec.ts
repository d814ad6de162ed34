import { roleRegistry } from '../../src/shared/metrics/metrics';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN } from './kube-fixtures';

/** The API server sheds requests above 30 a second (burst 12), as API Priority and Fairness would. */
const SERVER_LIMIT = { maxRequestsPerSecond: 30, maxBurst: 12 };
const TASKS = 15;

async function metric(name: string): Promise<number> {
  const text = await roleRegistry('dispatcher').metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

describe('Kubernetes backend under the API server rate limit', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest | undefined;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, runPods: true, ...SERVER_LIMIT });
  });

  afterEach(async () => {
    await under?.backend.close();
    under = undefined;
    await server.close();
  });

  it('keeps a burst of submits under the server limit (KUBE_API_QPS 10, KUBE_API_BURST 2): no 429, every agent running', async () => {
    const waitsBefore = await metric('dispatcher_kube_api_limiter_wait_seconds_count');
    under = startBackend(server, { qps: 10, burst: 2, retry: { attempts: 1, baseDelayMs: 10, maxDelayMs: 10 } });
    const startedAt = Date.now();
    const specs = Array.from({ length: TASKS }, () => makeSpec());
    let done = false;
    const submits = Promise.all(specs.map((spec) => under!.backend.submit(spec))).finally(() => (done = true));
    // The requests over the burst wait their turn, and the queue says so.
    let queueDepthSeen = 0;
    while (!done && queueDepthSeen === 0) {
      queueDepthSeen = await metric('dispatcher_kube_api_limiter_queue_depth');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const refs = await submits;
    const elapsed = Date.now() - startedAt;

    expect(refs).toHaveLength(TASKS);
    expect(server.throttled).toBe(0);
    expect(server.requests.filter((r) => r.status === 429)).toEqual([]);
    // 4 writes a task (Job, Secret, NetworkPolicy, resume) and the namespace's baseline, over the 2 of the burst, at 10 a second.
    const writes = [...server.writes().values()].reduce((a, b) => a + b, 0);
    expect(writes).toBe(TASKS * 4 + 1);
    expect(elapsed).toBeGreaterThanOrEqual(((writes - 2) / 10) * 1000 * 0.9);
    for (const spec of specs) await under.waitForPhase(spec.taskId, 'running');

    expect(queueDepthSeen).toBeGreaterThan(0);
    expect(await metric('dispatcher_kube_api_limiter_queue_depth')).toBe(0);
    expect(await metric('dispatcher_kube_api_limiter_wait_seconds_count') - waitsBefore).toBeGreaterThanOrEqual(writes);
  });

  it('holds no more requests unanswered than half of KUBE_API_BURST, so a stalled API server never meets a bigger bunch than the burst', async () => {
    // Every request waits 150 ms at the server; the bucket (1,000 a second) would let all of them go at once.
    server.delayNext(1_000, 150, (method, path) => method !== 'GET' || !path.endsWith('/log'));
    under = startBackend(server, { qps: 1000, burst: 24 });
    const specs = Array.from({ length: 16 }, () => makeSpec());
    const refs = await Promise.all(specs.map((spec) => under!.backend.submit(spec)));

    expect(refs).toHaveLength(16);
    expect([...server.writes().values()].reduce((a, b) => a + b, 0)).toBe(16 * 4 + 1);
    // Sixteen submits and the watches' lists want more at once; of the twelve places (half the
    // burst) ordinary calls get eleven, the twelfth being kept for urgent ones (a tenth, as of
    // the bucket's tokens).
    expect(server.peakOpenRequests).toBe(11);
    expect(await metric('dispatcher_kube_api_requests_in_flight')).toBe(0);
    expect(await metric('dispatcher_kube_api_in_flight_queue_depth')).toBe(0);
  });

  it('meets 429s from the same server when its own limit is above the server one', async () => {
    // A lower server limit than above, so that even a slow machine sends faster than it allows.
    await server.close();
    server = await KubeApiServer.start({ token: TOKEN, runPods: true, maxRequestsPerSecond: 10, maxBurst: 5 });
    under = startBackend(server, { qps: 1000, burst: 1000, retry: { attempts: 10, baseDelayMs: 10, maxDelayMs: 1500 } });
    const specs = Array.from({ length: TASKS }, () => makeSpec());
    const results = await Promise.allSettled(specs.map((spec) => under!.backend.submit(spec)));

    expect(server.throttled).toBeGreaterThan(0);
    // The dispatcher's scheduler waits such refusals out; the server was flooded all the same.
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    for (const { reason } of refused) expect(String(reason)).toMatch(/429 TooManyRequests/);
  });
});
