import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { TASK_ID_LABEL } from './kubernetes-manifests';
import { AgentTracker, StartFailureHooks } from './kubernetes-tracker';
import { AgentState } from './runtime';

const TASK = 'task-1';

function job(uid: string): V1Job {
  return { metadata: { name: `agent-${TASK}`, namespace: 'default', uid, labels: { [TASK_ID_LABEL]: TASK } }, spec: { template: {} }, status: {} };
}

function pod(jobUid: string, name: string, waiting: string, message = 'registry.example/agents/echo:1: not found'): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `pod-${name}`, creationTimestamp: new Date(), labels: { [TASK_ID_LABEL]: TASK }, ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: `agent-${TASK}`, uid: jobUid, controller: true }] },
    status: { phase: 'Pending', containerStatuses: [{ name: 'agent', image: 'echo', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: waiting, message } } }] },
  };
}

/** The hooks the backend gives the tracker, doing nothing but note the Jobs abandoned. */
function hooks(abandoned: string[]): StartFailureHooks {
  return {
    describe: async (_agent, problem) => problem.message,
    podCreationProblem: async () => undefined,
    abandon: async (taskId) => void abandoned.push(taskId),
    recordDisruptions: async () => undefined,
    stopOverEvicted: async () => undefined,
  };
}

describe('AgentTracker after a task ends', () => {
  let tracker: AgentTracker;
  let reported: AgentState[];
  let abandoned: string[];

  beforeEach(() => {
    abandoned = [];
    reported = [];
    tracker = new AgentTracker({ startSeconds: 0, pendingSeconds: 60 }, hooks(abandoned));
    tracker.onStateChange((_taskId, state) => reported.push(state));
  });
  afterEach(() => tracker.close());

  it('keeps a failed start final when its pod, collected after the Job, still changes', async () => {
    tracker.jobChanged('default', { type: 'ADDED', object: job('uid-1') });
    tracker.podChanged('default', { type: 'MODIFIED', object: pod('uid-1', 'p1', 'ErrImagePull') });
    await new Promise((resolve) => setImmediate(resolve));
    expect(reported.at(-1)).toMatchObject({ phase: 'failed_to_start', reason: 'ErrImagePull' });
    expect(abandoned).toEqual([TASK]);

    tracker.jobChanged('default', { type: 'DELETED', object: job('uid-1') });
    // The kubelet's next status write lands before the garbage collector marks the pod.
    tracker.podChanged('default', { type: 'MODIFIED', object: pod('uid-1', 'p1', 'ImagePullBackOff') });
    tracker.podChanged('default', { type: 'MODIFIED', object: pod('uid-1', 'p1', 'ErrImagePull') });
    expect(reported.at(-1)).toMatchObject({ phase: 'failed_to_start' });
    expect(tracker.get(TASK)).toBeUndefined();
  });

  it('does not take a task back from a late pod event after the backend forgot it', () => {
    tracker.jobChanged('default', { type: 'ADDED', object: job('uid-1') });
    tracker.podChanged('default', { type: 'ADDED', object: pod('uid-1', 'p1', 'ContainerCreating') });
    const before = reported.length;
    tracker.forget(TASK);
    tracker.podChanged('default', { type: 'MODIFIED', object: pod('uid-1', 'p1', 'ContainerCreating', 'pulling') });
    expect(reported).toHaveLength(before);
    expect(tracker.get(TASK)).toBeUndefined();
  });

  it('still follows a new Job of the same task after an old one was deleted', () => {
    tracker.jobChanged('default', { type: 'ADDED', object: job('uid-1') });
    tracker.jobChanged('default', { type: 'DELETED', object: job('uid-1') });
    expect(reported.at(-1)).toMatchObject({ phase: 'gone' });
    tracker.forget(TASK);

    tracker.jobChanged('default', { type: 'ADDED', object: job('uid-2') });
    tracker.podChanged('default', { type: 'MODIFIED', object: pod('uid-1', 'p1', 'ErrImagePull') });
    expect(reported.at(-1)).toEqual({ phase: 'starting' });
    tracker.podChanged('default', { type: 'ADDED', object: { ...pod('uid-2', 'p2', 'ContainerCreating'), status: { phase: 'Running', containerStatuses: [{ name: 'agent', image: 'echo', imageID: '', ready: true, restartCount: 0, state: { running: {} } }] } } });
    expect(reported.at(-1)).toEqual({ phase: 'running' });
  });
});
