import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { jobName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { KubeApiServer } from '../k8s/kube-api-server';

jest.setTimeout(60_000);

const TEMPLATE = `
metadata:
  labels: { team: platform }
  annotations: { example.com/owner: agents }
spec:
  imagePullSecrets: [{ name: registry-creds }]
  serviceAccountName: agent-runner
  nodeSelector: { pool: agents }
  containers:
    - name: agent
      resources: { requests: { ephemeral-storage: 1Gi }, limits: { ephemeral-storage: 2Gi } }
`;

describe('agent pods shaped by the dispatcher pod template and the task', () => {
  let kube: KubeApiServer;
  let system: TestSystem;
  let dir: string;

  beforeAll(async () => {
    kube = await KubeApiServer.start({ token: 'shaping-token', namespaces: ['agents'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shaping-'));
    fs.writeFileSync(path.join(dir, 'config'), kube.kubeconfig('agents'));
    fs.writeFileSync(path.join(dir, 'pod.yaml'), TEMPLATE);
    system = await startTestSystem({
      role: 'dispatcher',
      env: {
        DISPATCHER_BACKENDS: 'kubernetes', KUBECONFIG: path.join(dir, 'config'), KUBE_NAMESPACE: 'agents',
        KUBE_POD_TEMPLATE: path.join(dir, 'pod.yaml'),
        KUBE_TASK_LABEL_PREFIXES: 'tasks.example.com/', KUBE_TASK_ANNOTATION_PREFIXES: 'tasks.example.com/',
        KUBE_TASK_NODE_SELECTOR_KEYS: 'gpu', KUBE_TASK_TOLERATION_KEYS: 'dedicated', KUBE_TASK_PRIORITY_CLASSES: 'batch-low',
      },
    });
  });
  afterAll(async () => {
    await system?.close();
    await kube?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const kubernetesTask = (overrides: Record<string, unknown> = {}) =>
    makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' }, ...overrides });
  const additions = {
    labels: { 'tasks.example.com/run': 'nightly' },
    annotations: { 'tasks.example.com/ticket': 'OPS-12' },
    node_selector: { gpu: 'a100' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
    priority_class: 'batch-low',
  };

  it('merges the template and the allowed task additions into the pod, and keeps them on the task record', async () => {
    const request = kubernetesTask(additions);
    const created = await taskApi(system).create(request);
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject(additions);
    const job = await waitFor(async () => kube.store.get('jobs', 'agents', jobName(request.task_id)), 10_000, 'the Job');
    const pod = (job.spec as any).template;
    expect(pod.metadata.labels).toEqual({ team: 'platform', 'tasks.example.com/run': 'nightly', 'app.kubernetes.io/managed-by': 'local', 'task-id': request.task_id });
    expect(pod.metadata.annotations).toMatchObject({ 'example.com/owner': 'agents', 'tasks.example.com/ticket': 'OPS-12', 'karpenter.sh/do-not-disrupt': 'true' });
    expect(pod.spec).toMatchObject({
      imagePullSecrets: [{ name: 'registry-creds' }], serviceAccountName: 'agent-runner',
      nodeSelector: { pool: 'agents', gpu: 'a100' }, tolerations: additions.tolerations, priorityClassName: 'batch-low',
    });
    expect(pod.spec.containers[0].resources.limits).toEqual({ 'ephemeral-storage': '2Gi', ...request.resources });
    // The same request again is the same task; one without the additions is another body.
    expect((await taskApi(system).create(request)).status).toBe(200);
    expect((await taskApi(system).create({ ...request, priority_class: undefined })).status).toBe(409);
  });

  it.each([
    ['labels', { labels: { team: 'x' } }, 'key "team" is not allowed here (allowed: tasks.example.com/)'],
    ['annotations', { annotations: { 'other.example.com/a': 'b' } }, 'key "other.example.com/a" is not allowed here (allowed: tasks.example.com/)'],
    ['node_selector', { node_selector: { zone: 'b' } }, 'key "zone" is not allowed here (allowed: gpu)'],
    ['tolerations', { tolerations: [{ operator: 'Exists' }] }, 'toleration key "" is not allowed here (allowed: dedicated)'],
    ['priority_class', { priority_class: 'system-node-critical' }, '"system-node-critical" is not allowed here (allowed: batch-low)'],
    ['labels', { labels: { 'tasks.example.com/run': 'not valid!' } }, '"tasks.example.com/run" has an invalid value "not valid!"'],
  ])('refuses %s the dispatcher does not allow with 400 naming the field', async (field, overrides, message) => {
    const answer = await taskApi(system).create(kubernetesTask(overrides));
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.fields).toEqual({ [field]: [message] });
  });

  it('refuses a malformed toleration before looking at the allow-lists', async () => {
    const answer = await taskApi(system).create(kubernetesTask({ tolerations: [{ key: 'dedicated', effect: 'Sometimes' }] }));
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.error.details.fields)[0]).toMatch(/^tolerations/);
  });
});
