import { createHmac, timingSafeEqual } from 'node:crypto';
import type { V1Job } from '@kubernetes/client-node';
import { TASK_ID_LABEL } from './kubernetes-manifests';

/**
 * The mark a dispatcher writes on every Job it creates: HMAC-SHA256, keyed by the dispatcher's
 * own secret (AGENT_KEY, else API_KEY), of its name, the Job's namespace, name and task id.
 * Labels can be copied by anyone who may create Jobs in the namespace; this mark cannot be
 * made without the key, so a Job carrying the task labels but not the mark is someone else's:
 * the dispatcher neither adopts it nor deletes it.
 */
export const CREATOR_ANNOTATION = 'agent-tasks.dev/created-by';

export function creatorMark(key: string, dispatcherName: string, namespace: string, name: string, taskId: string): string {
  return createHmac('sha256', key).update(['job-creator', dispatcherName, namespace, name, taskId].join('\n')).digest('hex');
}

/** Whether this dispatcher (its name and key) created the Job. */
export function createdByUs(job: V1Job, key: string, dispatcherName: string): boolean {
  const { namespace, name, labels, annotations } = job.metadata ?? {};
  const taskId = labels?.[TASK_ID_LABEL];
  const mark = annotations?.[CREATOR_ANNOTATION];
  if (!namespace || !name || !taskId || !mark) return false;
  const expected = Buffer.from(creatorMark(key, dispatcherName, namespace, name, taskId));
  const given = Buffer.from(mark);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
