import { CREATOR_ANNOTATION, creatorMark } from '../../src/dispatcher/runtime/kubernetes-job-creator';
import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { agentApi, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { http } from '../harness/http';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';
import { TestSystem } from '../harness/system';
import { KubeApiServer } from '../k8s/kube-api-server';

jest.setTimeout(60_000);

describe('a task on the kubernetes backend, through the dispatcher API', () => {
  let kube: KubeApiServer;
  let system: TestSystem;
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({ DISPATCHER_BACKENDS: 'local,kubernetes', DISPATCHER_NAME: 'eu-1', JOB_TTL_SECONDS_AFTER_FINISHED: '2' });
    ({ kube, system } = under);
  });
  afterAll(() => under?.close());

  const kubernetesTask = (overrides: Record<string, unknown> = {}) =>
    makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' }, ...overrides });

  /** Creates the task and waits for its Job; returns the per-task key the agent would get from its Secret. */
  async function submit(request: Record<string, any>): Promise<string> {
    expect((await taskApi(system).create(request)).status).toBe(201);
    // The Job comes first, suspended; the submission is complete once its Secret and policy exist and it is resumed.
    await waitFor(async () => (kube.store.get('jobs', 'agents', jobName(request.task_id))?.spec as { suspend?: boolean } | undefined)?.suspend === false, 10_000, 'the Job to be resumed');
    const secret = kube.store.get('secrets', 'agents', secretName(request.task_id))!;
    return Buffer.from((secret.data as Record<string, string>)['agent-key'], 'base64').toString();
  }

  it('goes starting -> running -> completed with the agent using the key from its Secret; the finished Job goes at its TTL', async () => {
    const request = kubernetesTask();
    const agentKey = await submit(request);
    const job = kube.store.get('jobs', 'agents', jobName(request.task_id))!;
    expect(job.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'eu-1', 'task-id': request.task_id });
    const env = (job.spec as any).template.spec.containers[0].env;
    expect(env).toEqual(expect.arrayContaining([
      { name: 'TASK_ID', value: request.task_id },
      { name: 'GREETING', value: 'hello' },
      { name: 'AGENT_KEY', valueFrom: { secretKeyRef: { name: secretName(request.task_id), key: 'agent-key' } } },
    ]));
    expect((await taskApi(system).get(request.task_id)).body.data).toMatchObject({
      status: 'starting', runtime: { backend: 'kubernetes', ref: `agents/${jobName(request.task_id)}` },
    });

    kube.jobs.run('agents', jobName(request.task_id));
    kube.jobs.setLogs('agents', jobName(request.task_id), 'starting\nworking\ndone\n');
    const agent = agentApi(system, agentKey);
    expect((await agent.checkin({ task_id: request.task_id })).status).toBe(200);
    await waitForStatus(system, request.task_id, ['running']);
    expect((await agent.progress({ task_id: request.task_id, percentage: 50, message: 'half way' })).status).toBe(200);
    expect((await agent.write(`results/${request.task_id}/result.json`, '{"ok":true}')).status).toBeLessThan(300);
    const logs = await taskApi(system).logs(request.task_id, '?tail=2');
    expect(logs.text).toBe('working\ndone\n');

    const checkback = await agent.checkback({ task_id: request.task_id, status: 'completed', result_key: `results/${request.task_id}/result.json`, result_metadata: { pods: 1 } });
    expect(checkback.status).toBe(200);
    kube.jobs.finish('agents', jobName(request.task_id), { exitCode: 0 });
    const task = await waitForStatus(system, request.task_id, ['completed']);
    expect(task).toMatchObject({ result_key: `results/${request.task_id}/result.json`, result_metadata: { pods: 1 }, progress: { percentage: 50 } });
    // The finished Job stays for its ttlSecondsAfterFinished: the output can still be read.
    expect((await taskApi(system).logs(request.task_id)).text).toBe('starting\nworking\ndone\n');
    expect(kube.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(jobName(request.task_id)))).toBe(false);
    await waitFor(async () => !kube.store.get('jobs', 'agents', jobName(request.task_id)), 10_000, 'the TTL to remove the Job');
    await waitFor(async () => !kube.store.get('secrets', 'agents', secretName(request.task_id)), 5_000, 'the Secret to be collected');
  });

  it('refuses a namespace outside KUBE_NAMESPACES with 400 naming runtime_target.namespace', async () => {
    const answer = await taskApi(system).create(kubernetesTask({ runtime_target: { type: 'kubernetes', namespace: 'kube-system' } }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.fields['runtime_target.namespace']).toEqual(['must be one of the namespaces this dispatcher may use (KUBE_NAMESPACES): agents']);
    expect(kube.requests.some((r) => r.path.includes('kube-system'))).toBe(false);
    expect((await taskApi(system).create(kubernetesTask({ runtime_target: { type: 'kubernetes', namespace: 'agents' } }))).status).toBe(201);
  });

  it('carries a task on through an eviction: the new pod checks in again and completes it', async () => {
    const request = kubernetesTask();
    const agent = agentApi(system, await submit(request));
    kube.jobs.run('agents', jobName(request.task_id));
    expect((await agent.checkin({ task_id: request.task_id })).status).toBe(200);
    await waitForStatus(system, request.task_id, ['running']);
    const first = kube.jobs.pod('agents', jobName(request.task_id))!.metadata.name;

    kube.jobs.evict('agents', jobName(request.task_id));
    await waitFor(async () => kube.jobs.pod('agents', jobName(request.task_id))?.metadata.name !== first || undefined, 10_000, 'the replacement pod');
    kube.jobs.run('agents', jobName(request.task_id));
    const again = await agent.checkin({ task_id: request.task_id });
    expect(again.status).toBe(200);
    expect(again.body.data).toHaveProperty('env');
    expect((await taskApi(system).get(request.task_id)).body.data.status).toBe('running');
    expect((await agent.checkback({ task_id: request.task_id, status: 'completed', result_metadata: { pods: 2 } })).status).toBe(200);
    kube.jobs.finish('agents', jobName(request.task_id), { exitCode: 0 });
    expect(await waitForStatus(system, request.task_id, ['completed'])).toMatchObject({ result_metadata: { pods: 2 } });
  });

  it('refuses the key of another task', async () => {
    const request = kubernetesTask();
    await submit(request);
    const other = await submit(kubernetesTask());
    expect((await agentApi(system, other).checkin({ task_id: request.task_id })).status).toBe(403);
    await taskApi(system).cancel(request.task_id);
  });

  it('fails a task whose image cannot be pulled, with the reason and message, and deletes its Job', async () => {
    const request = kubernetesTask();
    await submit(request);
    kube.jobs.setWaiting('agents', jobName(request.task_id), 'ErrImagePull', 'failed to pull image "registry.example/agents/echo:1": not found');
    const task = await waitForStatus(system, request.task_id, ['failed'], 15_000);
    expect(task.error_message).toContain('ErrImagePull');
    expect(task.error_message).toContain('not found');
    await waitFor(async () => !kube.store.get('jobs', 'agents', jobName(request.task_id)), 10_000, 'the Job to be deleted');
  });

  it('fails a task whose pod the namespace quota refuses, with the FailedCreate event, and deletes its Job', async () => {
    kube.jobs.refusePods('agents', 'exceeded quota: agents-quota, requested: pods=1, used: pods=10, limited: pods=10');
    try {
      const request = kubernetesTask();
      await submit(request);
      expect(kube.store.list('pods', { namespace: 'agents', labelSelector: `task-id=${request.task_id}` })).toEqual([]);
      const task = await waitForStatus(system, request.task_id, ['failed'], 15_000);
      expect(task.error_message).toMatch(new RegExp(`FailedCreate: pods "${jobName(request.task_id)}-\\w+" is forbidden: exceeded quota: agents-quota`));
      await waitFor(async () => !kube.store.get('jobs', 'agents', jobName(request.task_id)), 10_000, 'the Job to be deleted');
    } finally {
      kube.jobs.allowPods('agents');
    }
  });

  it('names an OOM kill in the error and times out at the Job deadline', async () => {
    const oom = kubernetesTask();
    await submit(oom);
    kube.jobs.run('agents', jobName(oom.task_id));
    kube.jobs.finish('agents', jobName(oom.task_id), { exitCode: 137, reason: 'OOMKilled' });
    const failed = await waitForStatus(system, oom.task_id, ['failed']);
    expect(failed).toMatchObject({ exit_code: 137, error_message: expect.stringContaining('OOMKilled') });

    const slow = kubernetesTask();
    await submit(slow);
    kube.jobs.run('agents', jobName(slow.task_id));
    kube.jobs.exceedDeadline('agents', jobName(slow.task_id));
    expect(await waitForStatus(system, slow.task_id, ['timed_out'])).toMatchObject({ error_message: expect.stringContaining('deadline') });
  });

  it('cancels by suspending the Job, then deleting it with background propagation once its pod is gone', async () => {
    const request = kubernetesTask();
    await submit(request);
    kube.jobs.run('agents', jobName(request.task_id));
    expect((await taskApi(system).cancel(request.task_id)).status).toBe(200);
    await waitFor(async () => !kube.store.get('jobs', 'agents', jobName(request.task_id)), 10_000, 'the Job to be deleted');
    const deletion = kube.requests.find((r) => r.method === 'DELETE' && r.path.endsWith(jobName(request.task_id)));
    expect(deletion?.query.get('propagationPolicy')).toBe('Background');
    const writes = kube.requests.filter((r) => r.path.endsWith(jobName(request.task_id)) && r.method !== 'GET').map((r) => r.method);
    expect(writes).toEqual(['PATCH', 'PATCH', 'DELETE']);
    expect(kube.store.list('pods', { labelSelector: `job-name=${jobName(request.task_id)}` })).toEqual([]);
    expect((await taskApi(system).get(request.task_id)).body.data.status).toBe('cancelled');
  });

  it('after a restart adopts the running Job and deletes a Job of no known task it created, but leaves a Job it did not create alone', async () => {
    const request = kubernetesTask();
    const agentKey = await submit(request);
    kube.jobs.run('agents', jobName(request.task_id));
    await agentApi(system, agentKey).checkin({ task_id: request.task_id });
    await waitForStatus(system, request.task_id, ['running']);
    const labelled = (taskId: string, annotations: Record<string, string>) => kube.store.create('jobs', {
      apiVersion: 'batch/v1', kind: 'Job',
      metadata: { name: jobName(taskId), namespace: 'agents', labels: { 'app.kubernetes.io/managed-by': 'eu-1', 'task-id': taskId }, annotations },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'agent', image: 'x' }] } } },
    });
    // One this dispatcher created (its mark, keyed by its AGENT_KEY) for a task it no longer knows...
    const stray = kubernetesTask();
    labelled(stray.task_id, { [CREATOR_ANNOTATION]: creatorMark(system.agentKey, 'eu-1', 'agents', jobName(stray.task_id), stray.task_id) });
    // ...and one someone else made with the same labels: a copied label, a mark made without the key.
    const foreign = kubernetesTask();
    labelled(foreign.task_id, { [CREATOR_ANNOTATION]: creatorMark('not-the-key', 'eu-1', 'agents', jobName(foreign.task_id), foreign.task_id) });
    const unmarked = kubernetesTask();
    labelled(unmarked.task_id, {});

    await system.restart();
    await waitFor(async () => !kube.store.get('jobs', 'agents', jobName(stray.task_id)), 10_000, 'the stray Job to be deleted');
    expect(kube.store.get('jobs', 'agents', jobName(foreign.task_id))).toBeDefined();
    expect(kube.store.get('jobs', 'agents', jobName(unmarked.task_id))).toBeDefined();
    expect(kube.requests.filter((r) => r.method === 'DELETE' && (r.path.endsWith(jobName(foreign.task_id)) || r.path.endsWith(jobName(unmarked.task_id))))).toEqual([]);
    expect(kube.store.get('jobs', 'agents', jobName(request.task_id))).toBeDefined();
    expect((await taskApi(system).get(request.task_id)).body.data.status).toBe('running');
    kube.jobs.finish('agents', jobName(request.task_id), { exitCode: 2 });
    const task = await waitForStatus(system, request.task_id, ['failed']);
    expect(task).toMatchObject({ exit_code: 2, error_message: expect.stringContaining('without checking back') });
  });

  it('reports the API server in /ready', async () => {
    const ready = await http('GET', `${system.dispatcherUrl}/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body.details.runtime_kubernetes).toEqual({ status: 'up' });
  });
});
