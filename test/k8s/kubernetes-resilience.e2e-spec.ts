import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { TokenBucket } from '../../src/dispatcher/runtime/kubernetes-client';
import { KubeApiServer } from './kube-api-server';
import { backendsPerTest, kubeConfigFor, makeSpec, waitFor } from './kube-fixtures';

const isJobWatch = (r: { path: string; query: URLSearchParams }) => r.path.endsWith('/jobs') && r.query.get('watch') === 'true';
const isJobList = (r: { method: string; path: string; query: URLSearchParams }) => r.method === 'GET' && r.path.endsWith('/jobs') && !r.query.get('watch') && !r.query.get('limit');

describe('Kubernetes backend when the API server misbehaves', () => {
  const k8s = backendsPerTest();
  const start = k8s.start;
  let server: KubeApiServer;
  beforeEach(() => {
    server = k8s.server();
  });

  /** A backend with one submitted agent, its Job and pod watches open, and the Job lists so far. */
  async function submittedAndWatched() {
    const under = start();
    const spec = makeSpec();
    await under.backend.submit(spec);
    await under.backend.synced();
    await waitFor(() => server.openWatches('jobs', 'pods') === 2, 3000, 'both watches');
    return { under, spec, listsBefore: server.requests.filter(isJobList).length };
  }

  it('restarts a watch that goes silent past its bookmark interval, and sees what it missed', async () => {
    server = await k8s.restartServer({ bookmarkIntervalMs: 200 });
    const under = start({ watchSilenceSeconds: 1 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    await under.backend.synced();
    await waitFor(() => server.openWatches('jobs', 'pods') === 2, 3000, 'both watches');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Bookmarks keep a quiet watch alive: nothing restarted so far.
    expect(server.requests.filter(isJobWatch)).toHaveLength(0);
    const listsBefore = server.requests.filter(isJobList).length;
    server.muteWatches();
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running', 5000);
    // Both silent watches restart with a list; the pod watch's may be the one that saw the change first.
    await waitFor(() => server.requests.filter(isJobList).length > listsBefore, 5000, 'the silent Job watch restarted with a list');
  });

  it('re-lists and keeps watching after the watch stream is dropped', async () => {
    const { under, spec, listsBefore } = await submittedAndWatched();
    server.dropWatches();
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    await waitFor(() => server.openWatches('jobs', 'pods') === 2, 3000, 'the watches to come back');
    expect(server.requests.filter(isJobList).length).toBeGreaterThan(listsBefore);
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 0 });
    await under.waitForPhase(spec.taskId, 'exited');
  });

  it('resumes a watch the server ended on time from its resourceVersion, without re-listing', async () => {
    const under = start({ watchTimeoutSeconds: 1 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    await under.backend.synced();
    const listsBefore = server.requests.filter(isJobList).length;
    const watchesBefore = server.requests.filter(isJobWatch).length;
    await waitFor(() => server.requests.filter(isJobWatch).length >= watchesBefore + 2, 5000, 'two resumed watches');
    expect(server.requests.filter(isJobList).length).toBe(listsBefore);
    const resumed = server.requests.filter(isJobWatch).at(-1)!;
    expect(Number(resumed.query.get('resourceVersion'))).toBeGreaterThan(0);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
  });

  it('re-lists after 410 Gone and sees what changed while it was away', async () => {
    const { under, spec, listsBefore } = await submittedAndWatched();
    server.expireNextWatches(1, 'jobs', 'pods');
    server.store.compact();
    server.dropWatches();
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 4 });
    expect(await under.waitForPhase(spec.taskId, 'exited')).toMatchObject({ exitCode: 4 });
    // One re-list for the dropped stream, one for the 410 that answered the resumed watch.
    await waitFor(() => server.requests.filter(isJobList).length >= listsBefore + 2, 3000, 'two re-lists');
    await waitFor(() => server.openWatches('jobs', 'pods') === 2, 3000, 'the watches to come back');
  });

  it('after a restart lists its Jobs by label, adopts the running ones and lets unknown ones be deleted', async () => {
    const before = start();
    const [runningTask, finishedTask, unknownTask] = [makeSpec(), makeSpec(), makeSpec()];
    const refs = await Promise.all([runningTask, finishedTask, unknownTask].map((spec) => before.backend.submit(spec)));
    server.jobs.run('default', jobName(runningTask.taskId));
    server.jobs.run('default', jobName(finishedTask.taskId));
    server.jobs.finish('default', jobName(finishedTask.taskId), { exitCode: 0 });
    await before.backend.close();
    server.store.create('jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'someone-elses', namespace: 'default', labels: { 'app.kubernetes.io/managed-by': 'other' } }, spec: {} });

    const after = start();
    const managed = await after.backend.listManaged();
    expect(managed.sort((a, b) => a.taskId.localeCompare(b.taskId))).toEqual([
      { taskId: runningTask.taskId, ref: refs[0], state: { phase: 'running' } },
      { taskId: finishedTask.taskId, ref: refs[1], state: { phase: 'exited', exitCode: 0 } },
      { taskId: unknownTask.taskId, ref: refs[2], state: { phase: 'starting' } },
    ].sort((a, b) => a.taskId.localeCompare(b.taskId)));

    // What the dispatcher does with the list: remove Jobs of no known task, keep the rest.
    await after.backend.remove(unknownTask.taskId, refs[2]);
    expect(server.store.get('jobs', 'default', jobName(unknownTask.taskId))).toBeUndefined();
    expect(server.store.get('jobs', 'default', 'someone-elses')).toBeDefined();

    server.jobs.finish('default', jobName(runningTask.taskId), { exitCode: 0 });
    await after.waitForPhase(runningTask.taskId, 'exited');
  });

  it('retries 429 (honouring Retry-After), 5xx and connection resets', async () => {
    const under = start();
    const spec = makeSpec();
    const createJob = (method: string, path: string) => method === 'POST' && path.endsWith('/jobs');
    server.failNext(2, 429, { retryAfterSeconds: 1, match: createJob });
    server.failNext(1, 503, { match: createJob });
    server.resetNext(1, (method, path) => method === 'POST' && path.endsWith('/secrets'));
    const startedAt = Date.now();
    await under.backend.submit(spec);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1900);
    const creates = server.requests.filter((r) => createJob(r.method, r.path)).map((r) => r.status);
    expect(creates).toEqual([429, 429, 503, 201]);
    expect(server.store.list('secrets')).toHaveLength(1);
  });

  it('gives up on a 429 storm after its attempts and surfaces the API server message', async () => {
    const under = start({ retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 50 } });
    server.failNext(10, 429, { retryAfterSeconds: 0, match: (method) => method === 'POST' });
    await expect(under.backend.submit(makeSpec())).rejects.toThrow(/429 TooManyRequests: Too many requests/);
  });

  it('pings with an authorised call, which fails with a wrong token', async () => {
    await expect(start().backend.ping()).resolves.toBeUndefined();
    expect(server.requests.at(-1)).toMatchObject({ path: '/apis/batch/v1/namespaces/default/jobs', status: 200 });
    await expect(start({ kubeConfig: kubeConfigFor(server, 'wrong') }).backend.ping()).rejects.toThrow(/401/);
  });

  it('limits its own request rate (token bucket)', async () => {
    const bucket = new TokenBucket(20, 5);
    const startedAt = Date.now();
    await Promise.all(Array.from({ length: 15 }, () => bucket.take()));
    // 5 at once, then 10 more at 20 per second.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(450);
  });
});
