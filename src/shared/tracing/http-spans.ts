import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import { untracedContext } from '../logging/request-context';
import { asOwnClientRequest } from './own-client-request';
import { tracingStarted } from './sdk';

/** The HTTP server span of the request being handled, when the SDK records one. */
export function activeServerSpan(): Span | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * `{method} {route}` and `http.route` (HTTP semantic conventions) on the server span, from the
 * route pattern the role matched: the same name for the Express routes and the hot lane,
 * never the raw path (which holds ids).
 */
export function nameServerSpan(span: Span, method: string, route: string): void {
  // A hot-lane span is named at its start and may have ended already (its end listens for the
  // same `finish`): the SDK answers any change to an ended span with an Error and its stack.
  if (route === 'unmatched' || !span.isRecording()) return;
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}

let httpSpans: Tracer | undefined;
/** Looked up once, as `tracer()` in trace-context.ts. */
const httpTracer = (): Tracer => (httpSpans ??= trace.getTracer('agent-task-http'));

/**
 * Runs `work` (the handling of a hot-lane request) inside an HTTP server span of its own,
 * when the SDK runs. The hot lane answers its requests ahead of the HTTP server's `request`
 * event, where the http instrumentation would make this span: that instrumentation binds each
 * request's and response's event emitters to the context and reads a dozen attributes through
 * generic helpers, which cost the busiest endpoints (webhooks, callbacks, the agent protocol)
 * more than the rest of tracing together. The span is the same: `{method} {route}`, kind
 * SERVER, the caller's `traceparent` as its parent, and the semantic conventions' attributes.
 */
export function withServerSpan(request: IncomingMessage, response: ServerResponse, route: string, work: () => void): void {
  if (!tracingStarted()) return work();
  const parent = propagation.extract(untracedContext(), request.headers);
  const socket = request.socket;
  const [host, port] = splitHost(request.headers.host);
  const span = httpTracer().startSpan(`${request.method} ${route}`, {
    kind: SpanKind.SERVER,
    attributes: {
      'http.request.method': request.method,
      'http.route': route,
      'url.scheme': 'http',
      'url.path': (request.url ?? '').split('?')[0],
      'server.address': host,
      'server.port': port ?? socket.localPort,
      'client.address': socket.remoteAddress,
      'network.peer.address': socket.remoteAddress,
      'network.peer.port': socket.remotePort,
      'network.protocol.version': request.httpVersion,
      'user_agent.original': request.headers['user-agent'],
    },
  }, parent);
  const end = () => {
    response.removeListener('finish', end);
    response.removeListener('close', end);
    span.setAttribute('http.response.status_code', response.statusCode);
    if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  response.once('finish', end);
  response.once('close', end);
  context.with(trace.setSpan(parent, span), work);
}

function splitHost(header: string | undefined): [string | undefined, number | undefined] {
  if (!header) return [undefined, undefined];
  const at = header.lastIndexOf(':');
  if (at <= 0 || header.endsWith(']')) return [header, undefined];
  const port = Number(header.slice(at + 1));
  return [header.slice(0, at), Number.isInteger(port) ? port : undefined];
}

/** What a request answered, as far as its span needs to know. */
export interface ClientAnswer {
  status: number;
}

/**
 * Runs one of the roles' own requests to each other (a task to its dispatcher, a callback or a
 * progress report to the controller: `postJson`) in an HTTP CLIENT span made here, and hands
 * `work` the headers with that span's `traceparent` (and `tracestate`) added. These go out once
 * or more for every task; the fetch instrumentation's span of the same request parses the URL
 * and every request header, reads a dozen attributes and follows the request through four
 * diagnostics channels, about three times the CPU of this span (docs/tracing.md). The span is
 * the one the HTTP semantic conventions describe: named by the method, with `url.full`,
 * `server.address`, `server.port`, `http.response.status_code`, and `error.type` (the status
 * from 400 on, else `errorType` of what was thrown), a child of the active span. Outside every
 * trace, or with no SDK, the request goes as it is.
 */
export async function inClientSpan<T extends ClientAnswer>(
  method: string,
  url: string,
  headers: Record<string, string>,
  errorType: (error: unknown) => string,
  work: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  // A child of the active span even when that has ended: a progress report held back by its
  // once-a-second limit goes out after the agent's request that brought it.
  if (!tracingStarted() || !trace.getActiveSpan()) return work(headers);
  const target = new URL(url);
  if (target.username || target.password) {
    target.username = 'REDACTED';
    target.password = 'REDACTED';
  }
  const span = httpTracer().startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'url.full': target.href,
      'server.address': target.hostname,
      'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
    },
  });
  const active = asOwnClientRequest(trace.setSpan(context.active(), span));
  const traced = { ...headers };
  propagation.inject(active, traced);
  try {
    const answer = await context.with(active, () => work(traced));
    span.setAttribute('http.response.status_code', answer.status);
    if (answer.status >= 400) {
      span.setAttribute('error.type', String(answer.status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return answer;
  } catch (error) {
    span.setAttribute('error.type', errorType(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}
