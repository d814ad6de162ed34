import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';

jest.setTimeout(60_000);

/** A submit during an API server outage waits and is tried again (issue 22, item 7): the task is not failed. */
describe('submitting while the Kubernetes API server is down', () => {
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({ DISPATCHER_BACKENDS: 'local,kubernetes' });
  });
  afterAll(() => under?.close());

  it('keeps the task starting through the outage and starts its agent once the API server answers', async () => {
    const { kube, system } = under;
    const request = makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' } });
    // More refusals than the client's own retries (6) take: the submit itself must wait and come back.
    kube.failNext(8, 503, { match: (method, path) => method === 'POST' && path.endsWith('/jobs') });
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitFor(async () => kube.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/jobs') && r.status === 503).length >= 7, 30_000, 'the outage to outlast one submit');
    expect((await taskApi(system).get(request.task_id)).body.data.status).toBe('starting');
    await waitFor(async () => (await taskApi(system).get(request.task_id)).body.data.runtime.ref === `agents/${jobName(request.task_id)}`, 30_000, 'the submit to go through');
    expect((await taskApi(system).get(request.task_id)).body.data).toMatchObject({ status: 'starting', error_message: null });
    expect(kube.store.get('jobs', 'agents', jobName(request.task_id))).toBeDefined();
  });
});
