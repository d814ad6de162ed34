import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { RuntimeRegistry } from '../../src/dispatcher/runtime/runtime-registry';
import type { AppConfig } from '../../src/shared/config/config';
import { KubeApiServer } from './kube-api-server';
import { BackendUnderTest, makeSpec, startBackend, TOKEN, waitFor } from './kube-fixtures';

/** A stop is tried again until the runtime confirms it (issue 22, item 7): a cancelled agent never runs on to its deadline. */
describe('stopping an agent while the API server is failing', () => {
  let server: KubeApiServer;
  let under: BackendUnderTest;
  let registry: RuntimeRegistry;

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN, namespaces: ['default'] });
    under = startBackend(server, { retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 }, stopPollMs: 50 });
    registry = new RuntimeRegistry([under.backend], { dispatcherInstance: 'replica-a' } as AppConfig);
    registry.stopRetryBaseMs = 50;
    registry.stopRetryMaxMs = 200;
  });
  afterEach(async () => {
    registry.onApplicationShutdown();
    await under.backend.close();
    await server.close();
  });

  it('keeps trying the stop through an outage, then ends the pod and deletes the Job', async () => {
    const spec = makeSpec();
    const ref = await under.backend.submit(spec);
    await waitFor(() => server.jobs.pod('default', jobName(spec.taskId)) !== undefined, 3000, 'the pod');
    server.jobs.run('default', jobName(spec.taskId));
    await under.waitForPhase(spec.taskId, 'running');

    const suspend = (method: string, path: string) => method === 'PATCH' && path.endsWith(`/jobs/${jobName(spec.taskId)}`);
    server.failNext(1000, 503, { match: suspend });
    const stopped = registry.stopAndRemove({ taskId: spec.taskId, runtimeBackend: 'kubernetes', runtimeRef: ref });
    await waitFor(() => server.requests.filter((r) => suspend(r.method, r.path) && r.status === 503).length >= 6, 5000, 'several refused stops');
    expect(server.store.list('pods')).toHaveLength(1);

    server.recover();
    await stopped;
    expect(server.store.list('pods')).toEqual([]);
    await waitFor(() => server.store.list('jobs').length === 0, 3000, 'the Job to be deleted');
  });
});
