import type { V1Job } from '@kubernetes/client-node';
import { createdByUs, CREATOR_ANNOTATION, creatorMark } from './kubernetes-job-creator';

const job = (mark: string | undefined, over: { name?: string; taskId?: string } = {}): V1Job => ({
  metadata: {
    namespace: 'agents', name: over.name ?? 'agent-t1', labels: { 'task-id': over.taskId ?? 't1' },
    annotations: mark === undefined ? {} : { [CREATOR_ANNOTATION]: mark },
  },
});

describe('the mark of Jobs a dispatcher created', () => {
  const mark = creatorMark('key', 'eu-1', 'agents', 'agent-t1', 't1');

  it('is ours with the key, the name, the namespace and the task it was made for', () => {
    expect(createdByUs(job(mark), 'key', 'eu-1')).toBe(true);
  });

  it('is not ours without a mark, with another key or dispatcher name, or moved to another Job or task', () => {
    expect(createdByUs(job(undefined), 'key', 'eu-1')).toBe(false);
    expect(createdByUs(job(mark), 'other-key', 'eu-1')).toBe(false);
    expect(createdByUs(job(mark), 'key', 'us-1')).toBe(false);
    expect(createdByUs(job(mark, { name: 'agent-t2' }), 'key', 'eu-1')).toBe(false);
    expect(createdByUs(job(mark, { taskId: 't2' }), 'key', 'eu-1')).toBe(false);
    expect(createdByUs(job('short'), 'key', 'eu-1')).toBe(false);
  });
});
