import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { agentStateOf, startProblem } from './kubernetes-state';

const job = (conditions: { type: string; status: string; reason?: string; message?: string }[] = []): V1Job => ({ status: { conditions } } as V1Job);
const pod = (status: V1Pod['status']): V1Pod => ({ status } as V1Pod);
const container = (state: object) => pod({ phase: 'Pending', containerStatuses: [{ name: 'agent', state } as never] });

describe('agentStateOf', () => {
  it('is gone without a Job, starting before the pod runs, running after', () => {
    expect(agentStateOf(undefined, undefined)).toMatchObject({ phase: 'gone' });
    expect(agentStateOf(job(), undefined)).toEqual({ phase: 'starting' });
    expect(agentStateOf(job(), container({ waiting: { reason: 'ContainerCreating' } }))).toEqual({ phase: 'starting' });
    expect(agentStateOf(job(), pod({ phase: 'Running', containerStatuses: [{ name: 'agent', state: { running: {} } } as never] }))).toEqual({ phase: 'running' });
  });

  it('carries the reason of a pod that cannot start', () => {
    expect(agentStateOf(job(), container({ waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } }))).toEqual({
      phase: 'starting', reason: 'ImagePullBackOff', message: 'Back-off pulling image',
    });
    const unschedulable = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes' }] });
    expect(startProblem(unschedulable)).toEqual({ reason: 'Unschedulable', message: '0/1 nodes' });
  });

  it('takes the exit code and reason from the terminated container', () => {
    const failed = job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }]);
    expect(agentStateOf(failed, container({ terminated: { exitCode: 137, reason: 'OOMKilled' } }))).toMatchObject({ phase: 'exited', exitCode: 137, reason: 'OOMKilled' });
    expect(agentStateOf(job([{ type: 'Complete', status: 'True' }]), container({ terminated: { exitCode: 0, reason: 'Completed' } }))).toEqual({ phase: 'exited', exitCode: 0 });
  });

  it('answers a finished Job whose pod is gone from its conditions', () => {
    expect(agentStateOf(job([{ type: 'Complete', status: 'True' }]), undefined)).toEqual({ phase: 'exited', exitCode: 0 });
    expect(agentStateOf(job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }]), undefined)).toEqual({
      phase: 'exited', exitCode: -1, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit',
    });
  });

  it('reports DeadlineExceeded before anything the pod says', () => {
    const deadline = job([{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' }]);
    expect(agentStateOf(deadline, container({ terminated: { exitCode: 143 } }))).toEqual({ phase: 'deadline_exceeded', message: 'Job was active longer than specified deadline' });
  });

  it('reads FailureTarget, written before Failed while the pods terminate: a deadline is not "exited 143"', () => {
    const target = job([{ type: 'FailureTarget', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' }]);
    expect(agentStateOf(target, container({ terminated: { exitCode: 143, reason: 'Error' } }))).toEqual({ phase: 'deadline_exceeded', message: 'Job was active longer than specified deadline' });
    const terminating = { ...container({ terminated: { exitCode: 143, reason: 'Error' } }), metadata: { deletionTimestamp: new Date() } } as V1Pod;
    expect(agentStateOf(job(), terminating)).toEqual({ phase: 'running' });
    const policy = job([{ type: 'FailureTarget', status: 'True', reason: 'PodFailurePolicy', message: 'Container agent exited with 3' }]);
    expect(agentStateOf(policy, container({ terminated: { exitCode: 3, reason: 'Error' } }))).toEqual({ phase: 'exited', exitCode: 3, reason: 'Error' });
  });

  it('treats a disrupted pod as starting again, unless the Job has ended', () => {
    const evicted = pod({
      phase: 'Failed',
      conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' }],
      containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 143, reason: 'Error' } } } as never],
    });
    expect(agentStateOf(job(), evicted)).toEqual({ phase: 'starting', message: 'the pod was disrupted (EvictionByEvictionAPI: Eviction API: evicting); the Job starts a new one' });
    const failed = job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }]);
    expect(agentStateOf(failed, evicted)).toMatchObject({ phase: 'exited', exitCode: 143 });
  });
});
