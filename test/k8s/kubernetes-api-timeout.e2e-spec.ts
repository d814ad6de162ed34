import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { RuntimeUnavailableError } from '../../src/dispatcher/runtime/runtime';
import { roleRegistry } from '../../src/shared/metrics/metrics';
import { waitFor as waitUntil } from '../harness/wait';
import { KubeApiServer } from './kube-api-server';
import { backendsPerTest, makeSpec, waitFor } from './kube-fixtures';

const createJob = (method: string, path: string) => method === 'POST' && path.endsWith('/jobs');
const isWatch = (r: { query: URLSearchParams }) => r.query.get('watch') === 'true';

async function timeouts(verb: string, resource: string): Promise<number> {
  const series = `dispatcher_kube_api_timeouts_total{verb="${verb}",resource="${resource}"} `;
  const line = (await roleRegistry('dispatcher').metrics()).split('\n').find((l) => l.startsWith(series));
  return line ? Number(line.slice(series.length)) : 0;
}

async function limiterQueueDepth(): Promise<number> {
  const line = (await roleRegistry('dispatcher').metrics()).split('\n').find((l) => l.startsWith('dispatcher_kube_api_limiter_queue_depth '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

/** KUBE_API_TIMEOUT_SECONDS: an API server that accepts a request and never answers it. */
describe('Kubernetes backend when the API server hangs a request', () => {
  const k8s = backendsPerTest({ apiTimeoutSeconds: 0.5 });
  const start = k8s.start;
  let server: KubeApiServer;
  beforeEach(() => {
    server = k8s.server();
  });

  it('aborts a Job create left unanswered, closes its connection, counts it, and creates the Job on the next try', async () => {
    const under = start();
    const before = await timeouts('create', 'jobs');
    server.hangNext(2, createJob);
    const startedAt = Date.now();
    const spec = makeSpec();
    expect(await under.backend.submit(spec)).toBe(`default/${jobName(spec.taskId)}`);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect(server.hungRequests).toBe(2);
    await waitFor(() => server.openHungRequests() === 0, 2000, 'the hung connections to be closed by the client');
    expect(await timeouts('create', 'jobs') - before).toBe(2);
    expect(server.requests.filter((r) => createJob(r.method, r.path)).map((r) => r.status)).toEqual([201]);
  });

  it('reports a create hung past its tries as the API server being unavailable, as a refused connection is', async () => {
    const under = start({ retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 50 } });
    server.hangNext(10, createJob);
    const submit = under.backend.submit(makeSpec());
    await expect(submit).rejects.toBeInstanceOf(RuntimeUnavailableError);
    await expect(submit).rejects.toThrow(/the Kubernetes API server is unavailable: no answer from the Kubernetes API server to create jobs within 0.5 s/);
    expect(server.hungRequests).toBe(2);
    await waitFor(() => server.openHungRequests() === 0, 2000, 'the hung connections to be closed by the client');
  });

  it('lets other calls through its rate limit while one hangs: the hung call holds no token', async () => {
    // One token at a time, two a second: a call that held its token while hung would stall the rest.
    const under = start({ qps: 2, burst: 1, apiTimeoutSeconds: 5 });
    // A first task sets the namespace up (watches listed, default-deny policy written), so the
    // pings below queue behind the hung call alone, not behind that set-up at two calls a second.
    await under.backend.submit(makeSpec());
    await under.backend.synced();
    await waitUntil(async () => (await limiterQueueDepth()) === 0, 10_000, 'the set-up calls to be sent', 20);
    server.hangNext(1, createJob);
    const hungSubmit = under.backend.submit(makeSpec());
    await waitFor(() => server.hungRequests === 1, 3000, 'the Job create to hang');
    const pingedAt = Date.now();
    for (let i = 0; i < 3; i += 1) await under.backend.ping();
    expect(Date.now() - pingedAt).toBeLessThan(3000);
    expect(server.openHungRequests()).toBe(1);
    await hungSubmit;
    expect(server.openHungRequests()).toBe(0);
  });

  it('leaves watches and log follows open past the time-out', async () => {
    const under = start();
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    await under.backend.synced();
    await waitFor(() => server.openWatches('jobs', 'pods') === 2, 3000, 'both watches');
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    const reader = new AbortController();
    const follow = (await under.backend.followLogs(spec.taskId, ref, reader.signal))!;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Three time-outs have passed: no watch ended (an ended one is recorded) and the follow still streams.
    expect(server.requests.filter(isWatch)).toHaveLength(0);
    expect(server.openWatches('jobs', 'pods')).toBe(2);
    expect(server.openLogFollows.size).toBe(1);
    server.jobs.setLogs('default', jobName(spec.taskId), 'written after the time-out\n');
    const first = await follow.chunks[Symbol.asyncIterator]().next();
    expect(first.value).toBe('written after the time-out\n');
    reader.abort();
  });
});
