import { networkPolicyName } from '../../src/dispatcher/runtime/kubernetes-network-policy';
import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';

describe('Kubernetes backend against the Kubernetes API test server', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default', 'team-a'] });
    under = startBackend(server, { allowedNamespaces: ['default', 'team-a'] });
  });

  afterEach(async () => {
    await under.backend.close();
    await server.close();
  });

  it('runs a task through its whole life: Job and owned Secret, running, logs, exit, removal', async () => {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    expect(ref).toBe(`default/${jobName(spec.taskId)}`);
    const job = server.store.get('jobs', 'default', jobName(spec.taskId))!;
    const secret = server.store.get('secrets', 'default', secretName(spec.taskId))!;
    expect(job.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'test-dispatcher', 'task-id': spec.taskId });
    expect(secret.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: job.metadata.uid, controller: true })]);
    // The namespace's default-deny baseline, then the Job suspended; its Secret and egress policy
    // are created owned by it, and only then is it resumed: its pod never waits for its key
    // (CreateContainerConfigError) nor runs with open egress, and no Secret is ever patched.
    const writes = server.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path.split('/').slice(-2).join('/')}`);
    expect(writes).toEqual(['POST default/networkpolicies', 'POST default/jobs', 'POST default/secrets', 'POST default/networkpolicies', `PATCH jobs/${jobName(spec.taskId)}`]);
    expect(server.store.get('networkpolicies', 'default', networkPolicyName(spec.taskId))!.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: job.metadata.uid })]);
    await waitFor(() => server.jobs.pod('default', jobName(spec.taskId)) !== undefined, 3000, 'the resumed Job to make its pod');
    expect(server.jobs.pod('default', jobName(spec.taskId))!.status).toMatchObject({ containerStatuses: [{ state: { waiting: { reason: 'ContainerCreating' } } }] });
    expect(Buffer.from((secret.data as Record<string, string>)['agent-key'], 'base64').toString()).toBe(`key-for-${spec.taskId}`);

    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    server.jobs.setLogs('default', jobName(spec.taskId), 'one\ntwo\nthree\n');
    expect(await under.backend.logs(spec.taskId, ref, 2)).toBe('two\nthree\n');

    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 0 });
    expect(await under.waitForPhase(spec.taskId, 'exited')).toEqual({ phase: 'exited', exitCode: 0 });
    expect(await under.backend.status(spec.taskId, ref)).toEqual({ phase: 'exited', exitCode: 0 });

    // Finished: stop and remove leave the Job to its TTL, so the output stays readable.
    await under.backend.stop(spec.taskId, ref);
    await under.backend.remove(spec.taskId, ref);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))).toBeDefined();
    expect(await under.backend.logs(spec.taskId, ref)).toBe('one\ntwo\nthree\n');
    expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
  });

  it('lets the TTL controller delete a finished Job, whose Secret and Pod are collected with it', async () => {
    await under.backend.close();
    under = startBackend(server, { ttlSecondsAfterFinished: 1 });
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))!.spec).toMatchObject({ ttlSecondsAfterFinished: 1 });
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 0 });
    await under.waitForPhase(spec.taskId, 'exited');
    await under.backend.remove(spec.taskId, ref);
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the TTL to delete the Job');
    await waitFor(() => server.store.list('secrets').length === 0 && server.store.list('pods').length === 0, 3000, 'garbage collection');
    expect(under.states.get(spec.taskId)!.at(-1)).toEqual({ phase: 'exited', exitCode: 0 });
  });

  it('puts the Job in the task namespace and refuses a namespace that does not exist with the API server message', async () => {
    const spec = makeSpec({ namespace: 'team-a' });
    expect(await under.backend.submit(spec)).toBe(`team-a/${jobName(spec.taskId)}`);
    await expect(under.backend.submit(makeSpec({ namespace: 'missing' }))).rejects.toThrow('namespaces "missing" not found');
    expect(under.backend.validate({ image: 'x', namespace: 'Not_A_Name' })).toEqual({ 'runtime_target.namespace': [expect.any(String)] });
    expect(under.backend.validate({ image: 'x', namespace: 'team-a' })).toEqual({});
    expect(under.backend.validate({ image: 'x', namespace: 'kube-system' })).toEqual({
      'runtime_target.namespace': ['must be one of the namespaces this dispatcher may use (KUBE_NAMESPACES): default, team-a'],
    });
  });

  it.each([
    ['ErrImagePull', 'failed to pull and unpack image "registry.example/agents/echo:1": not found'],
    ['ImagePullBackOff', 'Back-off pulling image "registry.example/agents/echo:1"'],
    ['CreateContainerConfigError', 'secret "missing" not found'],
    ['InvalidImageName', 'Failed to apply default image tag "Bad Image"'],
  ])('fails a task whose pod is stuck in %s past the start grace, and deletes its Job', async (reason, message) => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.setWaiting('default', jobName(spec.taskId), reason, message);
    await under.waitForState(spec.taskId, { phase: 'starting', reason, message });
    expect(await under.waitForPhase(spec.taskId, 'failed_to_start', 4000)).toEqual({ phase: 'failed_to_start', reason, message });
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the Job to be deleted');
  });

  it('fails an unschedulable pod after its own, longer grace, with the scheduler message', async () => {
    await under.backend.close();
    under = startBackend(server, { startGraceSeconds: 1, pendingGraceSeconds: 3 });
    const spec = makeSpec();
    await under.backend.submit(spec);
    const submittedAt = Date.now();
    server.jobs.setUnschedulable('default', jobName(spec.taskId), '0/3 nodes are available: 3 Insufficient memory.');
    await new Promise((resolve) => setTimeout(resolve, 1800));
    expect(under.states.get(spec.taskId)!.at(-1)).toEqual({ phase: 'starting', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient memory.' });
    expect(await under.waitForPhase(spec.taskId, 'failed_to_start', 6000)).toEqual({
      phase: 'failed_to_start', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient memory.',
    });
    expect(Date.now() - submittedAt).toBeGreaterThanOrEqual(2900);
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the Job to be deleted');
  });

  it('does not fail a pod that recovers within the grace', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.setWaiting('default', jobName(spec.taskId), 'ImagePullBackOff', 'Back-off pulling image');
    await under.waitForState(spec.taskId, { phase: 'starting', reason: 'ImagePullBackOff', message: 'Back-off pulling image' });
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(under.states.get(spec.taskId)!.at(-1)).toEqual({ phase: 'running' });
  });

  const QUOTA = 'exceeded quota: compute, requested: limits.memory=256Mi, used: limits.memory=1Gi, limited: limits.memory=1Gi';

  it('fails a Job whose pod the cluster refuses to create, after the grace, with its FailedCreate event, and deletes the Job', async () => {
    server.jobs.refusePods('default', QUOTA);
    const spec = makeSpec();
    const submittedAt = Date.now();
    await under.backend.submit(spec);
    const job = server.store.get('jobs', 'default', jobName(spec.taskId))!;
    const failedCreate = () => server.store.list('events', { fieldSelector: `involvedObject.kind=Job,involvedObject.name=${jobName(spec.taskId)},reason=FailedCreate` });
    await waitFor(() => failedCreate().length >= 2, 3000, 'the Job controller to retry');
    expect(failedCreate()[0]).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Job', uid: job.metadata.uid } });

    const state = await under.waitForPhase(spec.taskId, 'failed_to_start', 4000);
    expect(Date.now() - submittedAt).toBeGreaterThanOrEqual(1000);
    expect(state).toEqual({ phase: 'failed_to_start', reason: 'FailedCreate', message: expect.stringMatching(new RegExp(`^pods "${jobName(spec.taskId)}-\\w+" is forbidden: exceeded quota: compute, `)) });
    // The latest attempt's event (each names another pod), not the first one.
    const messages = failedCreate().map((e) => String(e.message).replace(/^Error creating: /, ''));
    expect(messages.slice(1)).toContain((state as { message: string }).message);
    expect(under.states.get(spec.taskId)!.slice(0, -1).every((s) => s.phase === 'starting')).toBe(true);
    expect(server.requests.some((r) => r.path === '/api/v1/namespaces/default/events' && r.query.get('fieldSelector') === `involvedObject.kind=Job,involvedObject.name=${jobName(spec.taskId)}`)).toBe(true);
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the Job to be deleted');
    expect(server.store.list('pods')).toEqual([]);
  });

  it('does not fail a Job whose pod is created within the grace', async () => {
    server.jobs.refusePods('default', QUOTA);
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    await waitFor(() => server.store.list('events', { fieldSelector: 'reason=FailedCreate' }).length > 0, 3000, 'a FailedCreate event');
    server.jobs.allowPods('default');
    expect(server.store.list('pods')).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(under.states.get(spec.taskId)!.map((s) => s.phase)).toEqual(['starting']);
    expect(await under.backend.status(spec.taskId, ref)).toEqual({ phase: 'starting' });
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))).toBeDefined();
  });

  it('keeps waiting for a pod while nothing says its creation failed', async () => {
    server.jobs.refusePods('default', QUOTA);
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    // The Job controller's events are lost (say, the API server dropped them): no reason, no failure.
    const dropEvents = () => { for (const e of server.store.list('events', { fieldSelector: 'reason=FailedCreate' })) server.store.remove('events', 'default', e.metadata.name); };
    const cleaner = setInterval(dropEvents, 20);
    try {
      await new Promise((resolve) => setTimeout(resolve, 1600));
      expect(await under.backend.status(spec.taskId, ref)).toEqual({ phase: 'starting' });
      expect(server.store.get('jobs', 'default', jobName(spec.taskId))).toBeDefined();
    } finally {
      clearInterval(cleaner);
    }
    // Once the cluster says why, the next check fails it.
    expect(await under.waitForPhase(spec.taskId, 'failed_to_start', 4000)).toMatchObject({ reason: 'FailedCreate' });
  });

  it('names OOMKilled with its exit code', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 137, reason: 'OOMKilled' });
    const state = await under.waitForPhase(spec.taskId, 'exited');
    expect(state).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
    expect(state.phase === 'exited' && state.message).toMatch(/OOMKilled.*137/);
  });

  it('reports a failed agent with its exit code', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.finish('default', jobName(spec.taskId), { exitCode: 3 });
    expect(await under.waitForPhase(spec.taskId, 'exited')).toEqual({ phase: 'exited', exitCode: 3, reason: 'Error' });
  });

  it('reports DeadlineExceeded from FailureTarget, while the pod is still terminating with exit code 143', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    server.jobs.exceedDeadline('default', jobName(spec.taskId), 1500);
    expect(await under.waitForPhase(spec.taskId, 'deadline_exceeded', 1000)).toEqual({
      phase: 'deadline_exceeded', message: 'Job was active longer than specified deadline',
    });
    const job = server.store.get('jobs', 'default', jobName(spec.taskId))!;
    expect((job.status as { conditions: { type: string }[] }).conditions.map((c) => c.type)).toEqual(['FailureTarget']);
    expect(server.jobs.pod('default', jobName(spec.taskId))!.metadata).toHaveProperty('deletionTimestamp');
    await waitFor(() => !server.jobs.pod('default', jobName(spec.taskId)), 3000, 'the pod to go');
    expect(under.states.get(spec.taskId)!.map((s) => s.phase)).toEqual(['starting', 'running', 'deadline_exceeded']);
  });

  it('cancels by suspending the Job until its pod is gone, then deleting it with background propagation; its Secret follows', async () => {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');
    await under.backend.stop(spec.taskId, ref);
    expect(server.store.list('pods')).toEqual([]);
    expect(server.store.get('jobs', 'default', jobName(spec.taskId))!.spec).toMatchObject({ suspend: true });
    await under.backend.remove(spec.taskId, ref);
    const deletion = server.requests.find((r) => r.method === 'DELETE' && r.path.endsWith(`/jobs/${jobName(spec.taskId)}`));
    expect(deletion?.query.get('propagationPolicy')).toBe('Background');
    await waitFor(() => server.store.list('pods').length === 0 && server.store.list('secrets').length === 0, 3000, 'dependents to go');
    await expect(under.backend.stop(spec.taskId, ref)).resolves.toBeUndefined();
  });
});
