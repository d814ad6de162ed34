import type { V1Job } from '@kubernetes/client-node';
import { buildJob, buildSecret, dnsLabel, jobName, jobProblems, labelValue, ManifestError, secretName, secretProblems } from './kubernetes-manifests';
import { AgentSpec } from './runtime';
import { DEFAULT_AGENT_ISOLATION } from '../../shared/task-protocol/isolation';

const TASK_ID = '3f0c9a52-7d4e-4b8a-9c1f-2a6b5e8d7c10';
const settings = { namespace: 'agents', dispatcherName: 'eu-west dispatcher', ttlSecondsAfterFinished: 600 };

function makeSpec(over: Partial<AgentSpec> = {}): AgentSpec {
  return {
    taskId: TASK_ID,
    image: 'registry.example/agents/echo:1.2',
    namespace: '',
    env: { REPO: 'acme/app', TASK_ID, DISPATCHER_URL: 'http://dispatcher:8080', AGENT_KEY: 'per-task-key' },
    resources: { cpu: '500m', memory: '512Mi' },
    ports: [{ containerPort: 8080, protocol: 'TCP' }],
    timeoutSeconds: 900,
    isolation: DEFAULT_AGENT_ISOLATION,
    ...over,
  };
}

describe('buildJob', () => {
  const job = buildJob(makeSpec(), settings);
  const pod = job.spec!.template.spec!;
  const container = pod.containers[0];
  const labels = { 'app.kubernetes.io/managed-by': 'eu-west-dispatcher', 'task-id': TASK_ID };

  it('names the Job after the task in the default namespace, labelled for this dispatcher', () => {
    expect(job.apiVersion).toBe('batch/v1');
    expect(job.kind).toBe('Job');
    expect(job.metadata).toEqual({ name: `agent-${TASK_ID}`, namespace: 'agents', labels });
    expect(job.spec!.template.metadata).toEqual({ labels });
  });

  it('runs once, with a deadline past the timeout and a TTL after it finishes', () => {
    expect(job.spec).toMatchObject({ backoffLimit: 0, completions: 1, parallelism: 1, activeDeadlineSeconds: 930, ttlSecondsAfterFinished: 600 });
    expect(pod).toMatchObject({ restartPolicy: 'Never', automountServiceAccountToken: false, enableServiceLinks: false, terminationGracePeriodSeconds: 10 });
  });

  it('gives the agent container its image, resources as requests and limits, and ports', () => {
    expect(pod.containers).toHaveLength(1);
    expect(container.name).toBe('agent');
    expect(container.image).toBe('registry.example/agents/echo:1.2');
    expect(container.resources).toEqual({ requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '500m', memory: '512Mi' } });
    expect(container.ports).toEqual([{ containerPort: 8080, protocol: 'TCP' }]);
  });

  it('passes the env as values, except AGENT_KEY which comes from the task Secret', () => {
    expect(container.env).toEqual([
      { name: 'REPO', value: 'acme/app' },
      { name: 'TASK_ID', value: TASK_ID },
      { name: 'DISPATCHER_URL', value: 'http://dispatcher:8080' },
      { name: 'AGENT_KEY', valueFrom: { secretKeyRef: { name: `agent-${TASK_ID}-key`, key: 'agent-key' } } },
    ]);
    expect(JSON.stringify(job)).not.toContain('per-task-key');
  });

  it('uses the task namespace when it has one', () => {
    expect(buildJob(makeSpec({ namespace: 'team-a' }), settings).metadata!.namespace).toBe('team-a');
  });

  it('refuses a manifest the API server would reject', () => {
    expect(() => buildJob(makeSpec({ env: { 'BAD NAME': 'x' } }), settings)).toThrow(ManifestError);
    expect(() => buildJob(makeSpec({ image: ' ' }), settings)).toThrow(/has no image/);
  });
});

describe('buildSecret', () => {
  it('holds the per-task key, with no owner yet (the Job is created after it)', () => {
    const secret = buildSecret(makeSpec(), settings);
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: `agent-${TASK_ID}-key`,
        namespace: 'agents',
        labels: { 'app.kubernetes.io/managed-by': 'eu-west-dispatcher', 'task-id': TASK_ID },
      },
      type: 'Opaque',
      data: { 'agent-key': Buffer.from('per-task-key').toString('base64') },
    });
    expect(secretProblems(secret)).toEqual([]);
  });
});

describe('names and labels', () => {
  it('makes DNS-1123 labels of at most 63 characters from any task id', () => {
    expect(jobName(TASK_ID)).toBe(`agent-${TASK_ID}`);
    expect(secretName(TASK_ID)).toBe(`agent-${TASK_ID}-key`);
    const long = dnsLabel('agent', 'Task_ID with Spaces/and/slashes-'.repeat(4), '-key');
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(long.endsWith('-key')).toBe(true);
  });

  it('makes label values of any dispatcher name', () => {
    expect(labelValue('eu-west dispatcher')).toBe('eu-west-dispatcher');
    expect(labelValue('--')).toBe('dispatcher');
    expect(labelValue('x'.repeat(80))).toHaveLength(63);
  });
});

describe('jobProblems', () => {
  const valid = (): V1Job => structuredClone(buildJob(makeSpec(), settings));

  it('accepts the built Job', () => {
    expect(jobProblems(valid())).toEqual([]);
  });

  it('reports schema errors kubernetes-models finds (wrong types, missing containers list)', () => {
    const job = valid() as unknown as { spec: { backoffLimit: unknown; template: { spec: { containers?: unknown } } } };
    job.spec.backoffLimit = 'zero';
    expect(jobProblems(job as never).join(' ')).toMatch(/backoffLimit/);
    delete job.spec.template.spec.containers;
    expect(jobProblems(job as never).length).toBeGreaterThan(0);
  });

  it('reports what the schema lets through: unknown fields, bad names and labels, restartPolicy Always', () => {
    const job = valid();
    Object.assign(job.spec!, { activeDeadlineSecond: 5 });
    job.metadata!.name = 'Agent_1';
    job.metadata!.labels!.bad = 'a value with spaces';
    job.spec!.template.spec!.restartPolicy = 'Always';
    const problems = jobProblems(job);
    expect(problems).toEqual(expect.arrayContaining([
      'unknown field "spec.activeDeadlineSecond"',
      'metadata.name "Agent_1" is not a DNS-1123 label',
      'label "bad" has an invalid value "a value with spaces"',
      'spec.template.spec.restartPolicy must be Never or OnFailure for a Job (got Always)',
    ]));
  });

  it('finds unknown fields deep inside containers', () => {
    const job = valid();
    Object.assign(job.spec!.template.spec!.containers[0], { imag: 'x' });
    expect(jobProblems(job)).toContain('unknown field "spec.template.spec.containers[0].imag"');
  });
});

describe('buildJob with secret_env', () => {
  it('reads each variable from a Secret of the task namespace by secretKeyRef, never holding a value', () => {
    const job = buildJob(makeSpec({ namespace: 'team-a', secretEnv: { FORGE_TOKEN: { secret: 'forge-credentials', key: 'token' } } }), settings);
    const env = job.spec!.template.spec!.containers[0].env!;
    expect(job.metadata!.namespace).toBe('team-a');
    expect(env.find((variable) => variable.name === 'FORGE_TOKEN')).toEqual({ name: 'FORGE_TOKEN', valueFrom: { secretKeyRef: { name: 'forge-credentials', key: 'token' } } });
    expect(jobProblems(job)).toEqual([]);
  });
});
