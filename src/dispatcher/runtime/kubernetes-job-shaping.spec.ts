import { buildJob, ManifestError } from './kubernetes-manifests';
import { JobShaping } from './kubernetes-job-shaping';
import { AgentSpec } from './runtime';
import { DEFAULT_AGENT_ISOLATION } from '../../shared/task-protocol/isolation';

const TASK_ID = '5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6';
const spec: AgentSpec = {
  taskId: TASK_ID,
  image: 'registry.example/agents/echo:1',
  namespace: '',
  env: { TASK_ID, AGENT_KEY: 'k' },
  resources: { cpu: '500m', memory: '512Mi' },
  ports: [],
  timeoutSeconds: 600,
  isolation: DEFAULT_AGENT_ISOLATION,
};
const build = (shaping: JobShaping) => buildJob(spec, { namespace: 'agents', dispatcherName: 'eu-1', ttlSecondsAfterFinished: 600, shaping });
const plain: JobShaping = { doNotDisrupt: true, backoffLimit: 6, podTemplate: null };

describe('shaping agent Jobs', () => {
  it('keeps disruption from ending a task: do-not-evict annotations, DisruptionTarget ignored, any agent exit fails the Job', () => {
    const job = build(plain);
    expect(job.spec!.backoffLimit).toBe(6);
    expect(job.spec!.podFailurePolicy).toEqual({
      rules: [
        { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
        { action: 'FailJob', onExitCodes: { containerName: 'agent', operator: 'NotIn', values: [0] } },
      ],
    });
    expect(job.spec!.template.metadata!.annotations).toEqual({ 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false', 'karpenter.sh/do-not-disrupt': 'true' });
    expect(build({ ...plain, doNotDisrupt: false }).spec!.template.metadata!.annotations).toBeUndefined();
  });

  it('merges the dispatcher pod template into the pod, the Job keeping its own labels, policy and resources', () => {
    const job = build({
      ...plain,
      podTemplate: {
        metadata: { labels: { team: 'ml', 'task-id': 'not-this' }, annotations: { 'prometheus.io/scrape': 'false' } },
        spec: {
          imagePullSecrets: [{ name: 'registry-creds' }],
          serviceAccountName: 'agents',
          nodeSelector: { pool: 'agents' },
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
          priorityClassName: 'batch-low',
          affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'arch', operator: 'In', values: ['amd64'] }] }] } } },
          containers: [{ name: 'agent', resources: { requests: { 'ephemeral-storage': '2Gi', cpu: '9' }, limits: { 'ephemeral-storage': '4Gi' } } }],
        },
      },
    });
    const pod = job.spec!.template;
    expect(pod.metadata!.labels).toEqual({ team: 'ml', 'task-id': TASK_ID, 'app.kubernetes.io/managed-by': 'eu-1' });
    expect(pod.metadata!.annotations).toMatchObject({ 'prometheus.io/scrape': 'false', 'karpenter.sh/do-not-disrupt': 'true' });
    expect(pod.spec).toMatchObject({
      imagePullSecrets: [{ name: 'registry-creds' }], serviceAccountName: 'agents', nodeSelector: { pool: 'agents' }, priorityClassName: 'batch-low',
      restartPolicy: 'Never', automountServiceAccountToken: false,
    });
    expect(pod.spec!.containers[0].resources).toEqual({
      requests: { 'ephemeral-storage': '2Gi', cpu: '500m', memory: '512Mi' },
      limits: { 'ephemeral-storage': '4Gi', cpu: '500m', memory: '512Mi' },
    });
  });

  it('refuses a template the Kubernetes schema does not accept', () => {
    expect(() => build({ ...plain, podTemplate: { spec: { tolerations: [{ key: 'a', tolerationSeconds: 'soon' }] } } })).toThrow(ManifestError);
  });
});
