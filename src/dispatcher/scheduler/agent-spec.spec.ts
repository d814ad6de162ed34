import { Reader } from '../../shared/config/env-reader';
import { readIsolationDefaults } from '../../shared/config/isolation-config';
import { buildJob } from '../runtime/kubernetes-manifests';
import { TaskEntity } from '../tasks/task.entity';
import { agentSpecOf } from './agent-spec';

const TASK_ID = '3f0c9a52-7d4e-4b8a-9c1f-2a6b5e8d7c10';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function makeTask(env: Record<string, string> = {}): TaskEntity {
  return Object.assign(new TaskEntity(), {
    taskId: TASK_ID, agentImage: 'agents/echo:1', runtimeNamespace: '', env, resources: { cpu: '500m', memory: '512Mi' }, ports: [],
    timeoutSeconds: 600, runtimeClass: null, network: null, security: null, podAdditions: {}, secretEnv: {},
  });
}

const config = {
  agentKey: 'dispatcher-agent-key',
  agentDispatcherUrl: 'http://dispatcher:8080',
  agentIsolation: readIsolationDefaults(new Reader({})),
};

describe('an agent\'s trace context', () => {
  it('is TRACEPARENT and TRACESTATE in its environment, over a value of the same name in the task\'s env', () => {
    const spec = agentSpecOf(makeTask({ TRACEPARENT: 'set-by-the-task', REPO: 'acme/app' }), config, { traceparent: TRACEPARENT, tracestate: 'v=1' });
    expect(spec.env).toMatchObject({ TRACEPARENT, TRACESTATE: 'v=1', REPO: 'acme/app', TASK_ID });
  });

  it('is absent when the task has none', () => {
    expect(Object.keys(agentSpecOf(makeTask(), config, null).env)).not.toContain('TRACEPARENT');
  });

  it('reaches the Kubernetes Job\'s container as plain variables', () => {
    const job = buildJob(agentSpecOf(makeTask(), config, { traceparent: TRACEPARENT }), { namespace: 'agents', dispatcherName: 'd', ttlSecondsAfterFinished: 600 });
    expect(job.spec!.template.spec!.containers[0].env).toContainEqual({ name: 'TRACEPARENT', value: TRACEPARENT });
  });
});
