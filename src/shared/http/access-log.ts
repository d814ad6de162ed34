import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { context } from '@opentelemetry/api';
import { rootLogger } from '../logging/logger';
import { requestContext } from '../logging/request-context';
import { CENSORED } from '../logging/secret-fields';

/** Probes and metrics are logged only when they fail. */
const QUIET_PATHS = new Set(['/livez', '/livez/', '/health', '/health/', '/ready', '/ready/', '/metrics']);

export type AccessLog = (request: IncomingMessage, response: ServerResponse, next: () => void) => void;

type Level = 'silent' | 'info' | 'error';

/**
 * One line per answered request: `method`, `url` (secrets in the query redacted), `status`,
 * `duration_ms`; `request_id` and `role` come from the request context like on every other
 * line. A 5xx is an error line; a request whose client closed the connection before the
 * request or its answer was through is `request aborted`. No header is logged: the headers are the caller's credentials.
 *
 * Written here rather than by pino-http: its middleware made two child loggers per request
 * for request and response objects this line leaves out, and together with the logger's path
 * redaction of the time (which walked each line for its wildcard paths) it was the largest
 * share of a webhook delivery's CPU after the socket writes (see docs/performance.md). The
 * line's fields are fixed and hold no secret.
 */
export function createAccessLog(): AccessLog {
  const logger = rootLogger();
  return (request, response, next) => {
    const started = process.hrtime.bigint();
    // The request's context, for a response ended by its socket's close (a client that left):
    // that runs outside it, and the line would lose its request id, role and trace.
    const store = requestContext.getStore();
    const traced = context.active();
    const answered = (error?: Error): void => {
      response.removeListener('close', answered);
      response.removeListener('finish', answered);
      response.removeListener('error', answered);
      const level = levelOf(request, response, error);
      if (level === 'silent') return;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const fields = { method: request.method, url: redactQuery(urlOf(request)), status: response.statusCode, duration_ms: Math.round(seconds * 10000) / 10 };
      const write = () => logger[level](fields, level === 'error' || !leftEarly(request, response) ? 'request completed' : 'request aborted');
      if (!store || requestContext.getStore() === store) write();
      else context.with(traced, () => requestContext.run(store, write));
    };
    response.on('close', answered);
    response.on('finish', answered);
    response.on('error', answered);
    next();
  };
}

/** The client closed its connection before the request or its answer was through. */
function leftEarly(request: IncomingMessage, response: ServerResponse): boolean {
  return !response.writableEnded || (!request.complete && request.socket.destroyed);
}

function levelOf(request: IncomingMessage, response: ServerResponse, error?: Error): Level {
  if (error || response.statusCode >= 500) return 'error';
  return QUIET_PATHS.has(urlOf(request).split('?')[0]) && response.statusCode < 400 ? 'silent' : 'info';
}

function urlOf(request: IncomingMessage): string {
  return (request as Partial<Request>).originalUrl ?? request.url ?? '';
}

function redactQuery(url: string): string {
  if (!url.includes('?')) return url;
  return url.replace(/([?&](?:token|key|secret|signature)[^=]*=)[^&]*/gi, `$1${CENSORED}`);
}
