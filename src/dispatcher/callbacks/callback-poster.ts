import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { failureOf, postJson } from '../../shared/http/json-post';
import { forwardedTraceHeaders } from '../../shared/tracing/trace-context';
import { signCallbackBody } from '../../shared/task-protocol/callback-signature';

const REQUEST_TIMEOUT_MS = 10_000;

export interface PostOutcome {
  /** HTTP status, or null when no answer came (connection refused, time-out). */
  status: number | null;
  retryAfter: string | null;
  error: string | null;
}

/** POSTs a JSON body to the controller as the task's dispatcher: Bearer token, signature when a key is set. */
@Injectable()
export class CallbackPoster {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** `traceHeaders`: the task's trace context when no SDK writes it (shared/tracing). */
  async post(url: string, body: string, callbackToken: string, traceHeaders: Record<string, string> = forwardedTraceHeaders()): Promise<PostOutcome> {
    const headers: Record<string, string> = {
      ...traceHeaders,
      authorization: `Bearer ${callbackToken}`,
      'user-agent': 'agent-task-dispatcher',
    };
    if (this.config.callbackSigningKey) headers['x-service-signature'] = signCallbackBody(this.config.callbackSigningKey, body);
    try {
      const { status, retryAfter } = await postJson(url, body, headers, REQUEST_TIMEOUT_MS);
      return { status, retryAfter, error: status >= 200 && status < 300 ? null : `HTTP ${status}` };
    } catch (error) {
      return { status: null, retryAfter: null, error: failureOf(error) };
    }
  }
}
