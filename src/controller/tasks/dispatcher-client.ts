import { Injectable } from '@nestjs/common';
import { failureOf, postJson, PostAnswer } from '../../shared/http/json-post';
import { forwardedTraceHeaders } from '../../shared/tracing/trace-context';
import { TaskRequest } from '../../shared/task-protocol/task-request';
import { Dispatcher } from '../dispatchers/dispatchers.entity';

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * How a dispatcher answered: `accepted`; `refused` (a 4xx that another try would get too);
 * `unavailable` (no answer, 5xx, 408, 409, 429: another dispatcher or a later try may work).
 */
export type DispatcherAnswer =
  | { kind: 'accepted'; status: number }
  | { kind: 'refused' | 'unavailable'; status: number | null; message: string };

/** The controller's side of the dispatcher's task API (CONTRACT section 3, `X-API-Key`). */
@Injectable()
export class DispatcherClient {
  /** `traceHeaders`: the task's trace context when no SDK writes it (shared/tracing). */
  submitTask(dispatcher: Dispatcher, apiKey: string | null, body: TaskRequest, traceHeaders: Record<string, string> = {}): Promise<DispatcherAnswer> {
    return this.post(`${dispatcher.endpointUrl}/tasks`, apiKey, JSON.stringify(body), traceHeaders);
  }

  cancelTask(dispatcher: Dispatcher, apiKey: string | null, taskId: string): Promise<DispatcherAnswer> {
    return this.post(`${dispatcher.endpointUrl}/tasks/${encodeURIComponent(taskId)}/cancel`, apiKey, '{}');
  }

  /**
   * The task's output from its dispatcher (`GET /tasks/{id}/logs`): the text, or with
   * `follow` the open response whose body streams until the task is final there.
   */
  async taskLogs(dispatcher: Dispatcher, apiKey: string | null, taskId: string, options: { tail?: number; follow?: boolean; signal?: AbortSignal }): Promise<Response> {
    const query = new URLSearchParams();
    if (options.tail) query.set('tail', String(options.tail));
    if (options.follow) query.set('follow', 'true');
    const headers: Record<string, string> = { accept: 'text/plain' };
    if (apiKey) headers['x-api-key'] = apiKey;
    const url = `${dispatcher.endpointUrl}/tasks/${encodeURIComponent(taskId)}/logs${query.size ? `?${query}` : ''}`;
    // A follow lasts as long as the task (or until its own client goes away); a read is timed.
    // Never redirected: what another address answers is not this dispatcher's output.
    const response = await fetch(url, { headers, redirect: 'manual', signal: options.follow ? options.signal : AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new Error(`${response.status} from ${new URL(url).host}`);
    }
    return response;
  }

  private async post(url: string, apiKey: string | null, body: string, traceHeaders: Record<string, string> = forwardedTraceHeaders()): Promise<DispatcherAnswer> {
    const headers: Record<string, string> = { ...traceHeaders, accept: 'application/json', 'user-agent': 'agent-task-controller' };
    if (apiKey) headers['x-api-key'] = apiKey;
    let answer: PostAnswer;
    try {
      answer = await postJson(url, body, headers, REQUEST_TIMEOUT_MS);
    } catch (error) {
      return { kind: 'unavailable', status: null, message: `no answer from ${new URL(url).host}: ${failureOf(error)}` };
    }
    const { status, text } = answer;
    if (isRedirect(status)) {
      return { kind: 'unavailable', status, message: `${status} from ${new URL(url).host}: a redirect, which is never followed` };
    }
    if (status >= 200 && status < 300) return { kind: 'accepted', status };
    const message = `${status} from ${new URL(url).host}: ${errorMessageOf(text)}`;
    const retryable = status >= 500 || [408, 409, 429].includes(status);
    return { kind: retryable ? 'unavailable' : 'refused', status, message };
  }
}

function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

/** The dispatcher's envelope `{ok: false, error: {message}}`, else the start of the body. */
function errorMessageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } };
    if (parsed?.error?.message) return parsed.error.message;
  } catch {
    // not JSON
  }
  return text.slice(0, 200) || '(empty body)';
}
