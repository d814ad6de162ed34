import { Agent, request } from 'undici';
import { inClientSpan } from '../tracing/http-spans';
import { withDeadline } from './deadline';

/** What the other side answered: its status, the headers asked for, and the body as text. */
export interface PostAnswer {
  status: number;
  retryAfter: string | null;
  text: string;
}

/**
 * The connections of the task's hops between the roles (a task to its dispatcher, a callback
 * or progress report to the controller), kept alive between calls. These POSTs go out once or
 * more per task, so they use undici's `request` rather than the global `fetch` built on it: the
 * same client without the Fetch standard's streams, request clone and header guards, at about a
 * quarter of `fetch`'s CPU per call (docs/performance.md). A redirect is answered as it is,
 * never followed: a task's env and tokens go to the address registered for them only.
 */
const connections = new Agent({ keepAliveTimeout: 10_000 });

/**
 * POSTs `body` (JSON) to `url`, in an HTTP client span of its own when traced; rejects when no
 * answer came within `timeoutMs` (a refused connection, a time-out).
 */
export function postJson(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
  return inClientSpan('POST', url, headers, failureOf, (traced) => send(url, body, traced, timeoutMs));
}

function send(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
  return withDeadline(timeoutMs, async (signal) => {
    const answer = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, dispatcher: connections, signal });
    const text = await answer.body.text().catch(() => '');
    const retryAfter = answer.headers['retry-after'];
    return { status: answer.statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : (retryAfter ?? null), text };
  });
}

/** Why no answer came, in a word an operator can search for: the socket error's code (ECONNREFUSED), else the error's name (TimeoutError). */
export function failureOf(error: unknown): string {
  const coded = error as { code?: unknown; cause?: { code?: unknown } };
  if (typeof coded?.code === 'string' && !coded.code.startsWith('UND_ERR_')) return coded.code;
  if (typeof coded?.cause?.code === 'string') return coded.cause.code;
  if (error instanceof Error || error instanceof DOMException) return error.name;
  return 'request failed';
}
