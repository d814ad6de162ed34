import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
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

let hotLane: Tracer | undefined;
/** Looked up once, as `tracer()` in trace-context.ts. */
const hotLaneTracer = (): Tracer => (hotLane ??= trace.getTracer('agent-task-http'));

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
  const parent = propagation.extract(ROOT_CONTEXT, request.headers);
  const socket = request.socket;
  const [host, port] = splitHost(request.headers.host);
  const span = hotLaneTracer().startSpan(`${request.method} ${route}`, {
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
