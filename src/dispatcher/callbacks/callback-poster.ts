import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
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
      'Content-Type': 'application/json',
      Authorization: `Bearer ${callbackToken}`,
      'User-Agent': 'agent-task-dispatcher',
    };
    if (this.config.callbackSigningKey) headers['X-Service-Signature'] = signCallbackBody(this.config.callbackSigningKey, body);
    try {
      const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), redirect: 'manual' });
      await response.arrayBuffer().catch(() => undefined);
      const ok = response.status >= 200 && response.status < 300;
      return { status: response.status, retryAfter: response.headers.get('retry-after'), error: ok ? null : `HTTP ${response.status}` };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      return { status: null, retryAfter: null, error: cause ?? (error instanceof Error ? error.name : 'request failed') };
    }
  }
}
