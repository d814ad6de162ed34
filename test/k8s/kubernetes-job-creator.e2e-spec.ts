import { CREATOR_ANNOTATION } from '../../src/dispatcher/runtime/kubernetes-job-creator';
import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN } from './kube-fixtures';

/** The backend adopts, stops and deletes only Jobs it created: a task's labels alone are not enough. */
describe('Kubernetes backend and Jobs it did not create', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN });
    under = startBackend(server, { creatorKey: 'this-dispatchers-key' });
  });
  afterEach(async () => {
    await under.backend.close();
    await server.close();
  });

  const labelledJob = (taskId: string, annotations: Record<string, string> = {}) => server.store.create('jobs', {
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: { name: jobName(taskId), namespace: 'default', labels: { 'app.kubernetes.io/managed-by': 'test-dispatcher', 'task-id': taskId }, annotations },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'agent', image: 'x' }] } } },
  });

  it('marks the Jobs it creates, lists them, and leaves out a Job with the same labels and a copied mark', async () => {
    const ours = makeSpec();
    const ref = await under.backend.submit(ours);
    const mark = server.store.get('jobs', 'default', jobName(ours.taskId))!.metadata.annotations![CREATOR_ANNOTATION];
    expect(mark).toMatch(/^[0-9a-f]{64}$/);
    const foreign = makeSpec();
    labelledJob(foreign.taskId, { [CREATOR_ANNOTATION]: mark });

    expect((await under.backend.listManaged()).map((agent) => agent.ref)).toEqual([ref]);
  });

  it('answers gone for a task whose Job someone else made, and neither stops nor deletes it', async () => {
    const spec = makeSpec();
    labelledJob(spec.taskId);
    const ref = `default/${jobName(spec.taskId)}`;
    expect(await under.backend.status(spec.taskId, ref)).toEqual({ phase: 'gone', message: `Job ${jobName(spec.taskId)} was not created by this dispatcher; it is left alone` });
    await under.backend.stop(spec.taskId, ref);
    await under.backend.remove(spec.taskId, ref);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))!.spec).not.toHaveProperty('suspend');
    expect(server.requests.filter((r) => r.method !== 'GET' && r.path.endsWith(jobName(spec.taskId)))).toEqual([]);
  });

  it('refuses to take over a Job of the same name it did not create when it submits the task', async () => {
    const spec = makeSpec();
    labelledJob(spec.taskId);
    await expect(under.backend.submit(spec)).rejects.toThrow(`Job ${jobName(spec.taskId)} exists and was not created by this dispatcher`);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))).toBeDefined();
  });
});
