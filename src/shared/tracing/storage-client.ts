/**
 * The object store's client names itself with this in its `user-agent` (`setAppInfo`), and the
 * http instrumentation leaves its requests alone: each object storage call is a span of its
 * own (`inStorageSpan`), made without the instrumentation's per-request work: a dozen attributes
 * read through generic helpers, and the request's and response's event emitters bound to the
 * context. A brief is written for every task the controller hands off, so this is on the path
 * of every task.
 */
export const STORAGE_CLIENT_APP = 'agent-task-storage';

/** True for a request of the object store's client (`STORAGE_CLIENT_APP` in its `user-agent`). */
export function isStorageClientRequest(headers: Record<string, unknown> | undefined): boolean {
  const agent = headers?.['user-agent'] ?? headers?.['User-Agent'];
  return typeof agent === 'string' && agent.includes(` ${STORAGE_CLIENT_APP}/`);
}
