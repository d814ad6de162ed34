import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { KubeApiServer } from '../k8s/kube-api-server';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);

/** How long the Kubernetes API server sits on the slow task's Secret: far longer than an echo agent runs. */
const SLOW_SUBMIT_MS = 8_000;

// One backend slow to take a task (a Kubernetes API server answering late) must not hold
// up tasks for another backend, and the start loop still never passes MAX_CONCURRENT_TASKS.
describe('the start loop while a submit is still under way', () => {
  let kube: KubeApiServer;
  let system: TestSystem;
  let kubeconfigDir: string;

  beforeAll(async () => {
    kube = await KubeApiServer.start({ namespaces: ['agents'] });
    kubeconfigDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
    const kubeconfig = path.join(kubeconfigDir, 'config');
    fs.writeFileSync(kubeconfig, kube.kubeconfig('agents'));
    system = await startTestSystem({
      role: 'dispatcher',
      env: { DISPATCHER_BACKENDS: 'local,kubernetes', KUBECONFIG: kubeconfig, KUBE_NAMESPACE: 'agents', MAX_CONCURRENT_TASKS: '2' },
    });
  });
  afterAll(async () => {
    await system?.close();
    await kube?.close();
    fs.rmSync(kubeconfigDir, { recursive: true, force: true });
  });

  it('runs local tasks while a Kubernetes submit waits, one at a time in the one free slot', async () => {
    const api = taskApi(system);
    kube.delayNext(1, SLOW_SUBMIT_MS, (method, url) => method === 'POST' && url.endsWith('/secrets'));
    const slow = makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' } });
    expect((await api.create(slow)).status).toBe(201);
    // Claimed and handed to the backend, whose Secret (after the suspended Job) is held by the API server.
    await waitForStatus(system, slow.task_id, ['starting'], 5_000);

    const quick = [0, 1].map(() => makeTaskRequest({ brief_key: '' }));
    for (const request of quick) expect((await api.create(request)).status).toBe(201);
    const [first, second] = await Promise.all(quick.map((request) => waitForStatus(system, request.task_id, ['completed'], SLOW_SUBMIT_MS)));

    // Both ran while the slow submit was still waiting for its Secret...
    expect(kube.store.get('secrets', 'agents', secretName(slow.task_id))).toBeUndefined();
    // Its Job exists only suspended: no pod runs before its Secret and egress policy exist.
    expect((kube.store.get('jobs', 'agents', jobName(slow.task_id))?.spec as { suspend?: boolean } | undefined)?.suspend ?? true).toBe(true);
    expect(kube.store.list('pods', { namespace: 'agents' })).toEqual([]);
    expect((await api.get(slow.task_id)).body.data).toMatchObject({ status: 'starting', runtime: { backend: 'kubernetes', ref: null } });
    // ...and with the slow task holding one of the two slots, the second started only after the first ended.
    expect(Date.parse(second.started_at)).toBeGreaterThanOrEqual(Date.parse(first.finished_at));

    const submitted = await waitFor(async () => (await api.get(slow.task_id)).body.data.runtime.ref, SLOW_SUBMIT_MS + 5_000, 'the slow submit to finish');
    expect(submitted).toBe(`agents/${jobName(slow.task_id)}`);
  });
});
