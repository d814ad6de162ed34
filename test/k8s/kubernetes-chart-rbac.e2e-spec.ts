import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';
import { chartDispatcherRules } from './kube-rbac';

/**
 * The test API server authorizes every request by the chart's own dispatcher Role (per verb):
 * the backend's whole life of a task fits in it, and the Role grants no way to read a Secret.
 */
describe("the Kubernetes backend under the chart's Role", () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default'], rules: chartDispatcherRules() });
    under = startBackend(server, { policyReconcileMs: 100, stopPollMs: 50 });
  });
  afterEach(async () => {
    await under.backend.close();
    await server.close();
  });

  const refused = () => server.requests.filter((r) => r.status === 403).map((r) => `${r.method} ${r.path}`);

  it('submits, watches, reads logs, puts back a policy, stops and removes with no request refused', async () => {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    await waitFor(() => server.jobs.pod('default', jobName(spec.taskId)) !== undefined, 3000, 'the pod');
    server.jobs.run('default', jobName(spec.taskId));
    server.jobs.setLogs('default', jobName(spec.taskId), 'hello\n');
    await under.waitForPhase(spec.taskId, 'running');
    expect(await under.backend.logs(spec.taskId, ref)).toBe('hello\n');
    expect(await under.backend.status(spec.taskId, ref)).toEqual({ phase: 'running' });
    expect((await under.backend.listManaged()).map((agent) => agent.taskId)).toEqual([spec.taskId]);
    const policies = server.store.list('networkpolicies').length;
    server.store.remove('networkpolicies', 'default', server.store.list('networkpolicies').at(-1)!.metadata.name);
    await waitFor(() => server.store.list('networkpolicies').length === policies, 3000, 'the policy to be put back');
    await under.backend.stop(spec.taskId, ref);
    await under.backend.remove(spec.taskId, ref);
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the Job to be deleted');
    expect(refused()).toEqual([]);
  });

  it('refuses the verbs the Role leaves out: no Secret is read, listed or patched', async () => {
    const spec = makeSpec();
    await under.backend.submit(spec);
    const call = (method: string, path: string, body?: unknown) => fetch(`${server.url}${path}`, {
      method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json-patch+json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const secret = `/api/v1/namespaces/default/secrets/${secretName(spec.taskId)}`;
    expect((await call('GET', secret)).status).toBe(403);
    expect((await call('GET', '/api/v1/namespaces/default/secrets')).status).toBe(403);
    const patch = await call('PATCH', secret, [{ op: 'add', path: '/metadata/labels/x', value: 'y' }]);
    expect(patch.status).toBe(403);
    expect(((await patch.json()) as { message: string }).message).toContain('cannot patch resource "secrets"');
  });
});
