import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { pinoHttp } from 'pino-http';
import { rootLogger } from '../logging/logger';

/** Probes and metrics are logged only when they fail. */
const QUIET_PATHS = new Set(['/livez', '/livez/', '/health', '/health/', '/ready', '/ready/', '/metrics']);

export type AccessLog = (request: IncomingMessage, response: ServerResponse, next: () => void) => void;

/** When each response's clock started (high resolution, for `duration_ms`). */
const started = new WeakMap<ServerResponse, bigint>();

/**
 * One line per answered request, written by pino-http: `method`, `url` (secrets in the query
 * redacted), `status`, `duration_ms`; `request_id` and `role` come from the request context
 * like on every other line. A 5xx is an error line; an aborted request says so. pino-http's
 * request and response objects are left out: the headers are the caller's credentials.
 */
export function createAccessLog(): AccessLog {
  const middleware = pinoHttp({
    logger: rootLogger(),
    wrapSerializers: false,
    serializers: { req: () => undefined, res: () => undefined },
    customLogLevel: (request, response, error) => levelOf(request, response, error),
    customSuccessMessage: (request, response) => (response.writableEnded ? 'request completed' : 'request aborted'),
    customErrorMessage: () => 'request completed',
    customSuccessObject: (request, response) => fieldsOf(request, response),
    customErrorObject: (request, response) => fieldsOf(request, response),
  });
  return (request, response, next) => {
    started.set(response, process.hrtime.bigint());
    middleware(request, response, next);
  };
}

function levelOf(request: IncomingMessage, response: ServerResponse, error?: Error): 'silent' | 'info' | 'error' {
  if (error || response.statusCode >= 500) return 'error';
  return QUIET_PATHS.has(urlOf(request).split('?')[0]) && response.statusCode < 400 ? 'silent' : 'info';
}

function fieldsOf(request: IncomingMessage, response: ServerResponse) {
  const since = started.get(response);
  const seconds = since === undefined ? 0 : Number(process.hrtime.bigint() - since) / 1e9;
  return { method: request.method, url: redactQuery(urlOf(request)), status: response.statusCode, duration_ms: Math.round(seconds * 10000) / 10 };
}

function urlOf(request: IncomingMessage): string {
  return (request as Partial<Request>).originalUrl ?? request.url ?? '';
}

function redactQuery(url: string): string {
  return url.replace(/([?&](?:token|key|secret|signature)[^=]*=)[^&]*/gi, '$1[redacted]');
}
