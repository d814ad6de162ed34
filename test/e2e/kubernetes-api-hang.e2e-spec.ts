import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { agentApi, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';
import { scrape } from '../harness/metrics';

jest.setTimeout(120_000);

const createJob = (method: string, path: string) => method === 'POST' && path.endsWith('/jobs');

/**
 * An API server that accepts a Job create and never answers (KUBE_API_TIMEOUT_SECONDS): the
 * request is aborted and counted as the server being unreachable, so the start waits the
 * outage out as it does for refused connections, and the task is never left starting forever.
 */
describe('agent starts against an API server that hangs', () => {
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({ KUBE_API_TIMEOUT_SECONDS: '1' });
  });
  afterAll(() => under?.close());
  afterEach(() => under.kube.recover());

  const kubernetesTask = (timeoutSeconds = 60) => makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' }, timeout_seconds: timeoutSeconds });
  const metric = async (series: string) => (await scrape(under.system.dispatcherUrl)).value(series) ?? 0;
  const timeouts = () => metric('dispatcher_kube_api_timeouts_total{verb="create",resource="jobs"}');
  const retries = () => metric('dispatcher_start_retries_total{cause="runtime"}');

  it('keeps the task starting while its Job create hangs, closes each hung request, and completes once the server answers', async () => {
    const { kube, system } = under;
    const [timeoutsBefore, retriesBefore] = [await timeouts(), await retries()];
    // More hung tries than one call's own attempts (6): the submit itself must step back and wait.
    kube.hangNext(8, createJob);
    const request = kubernetesTask();
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitFor(async () => (await retries()) > retriesBefore, 60_000, 'the submit to wait out the hung server');
    expect((await taskApi(system).get(request.task_id)).body.data).toMatchObject({ status: 'starting', error_message: null });

    await waitFor(async () => (kube.store.get('jobs', 'agents', jobName(request.task_id))?.spec as { suspend?: boolean } | undefined)?.suspend === false, 60_000, 'the Job to be created and resumed');
    expect(kube.hungRequests).toBe(8);
    expect(kube.openHungRequests()).toBe(0);
    expect((await timeouts()) - timeoutsBefore).toBe(8);

    const secret = kube.store.get('secrets', 'agents', secretName(request.task_id))!;
    const agent = agentApi(system, Buffer.from((secret.data as Record<string, string>)['agent-key'], 'base64').toString());
    kube.jobs.run('agents', jobName(request.task_id));
    expect((await agent.checkin({ task_id: request.task_id })).status).toBe(200);
    expect((await agent.checkback({ task_id: request.task_id, status: 'completed' })).status).toBe(200);
    kube.jobs.finish('agents', jobName(request.task_id), { exitCode: 0 });
    expect(await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out'], 30_000)).toMatchObject({ status: 'completed', error_message: null });
  });

  it('ends a task whose Job create never gets an answer at its time-out, with no request left open', async () => {
    const { kube, system } = under;
    const hungBefore = kube.hungRequests;
    kube.hangNext(10_000, createJob);
    const request = kubernetesTask(5);
    expect((await taskApi(system).create(request)).status).toBe(201);
    const task = await waitForStatus(system, request.task_id, ['completed', 'failed', 'timed_out'], 30_000);
    expect(task).toMatchObject({ status: 'timed_out', error_message: 'The task did not finish within 5 s.' });
    expect(kube.hungRequests - hungBefore).toBeGreaterThanOrEqual(3);
    // The call in flight at the time-out ends its own tries (each closed at its deadline); the start then sees the task final and stops.
    await waitFor(async () => {
      const tries = kube.hungRequests;
      await new Promise((resolve) => setTimeout(resolve, 2500));
      return kube.hungRequests === tries && kube.openHungRequests() === 0;
    }, 45_000, 'the start to stop trying, every hung request closed');
    expect(kube.store.get('jobs', 'agents', jobName(request.task_id))).toBeUndefined();
  });
});
