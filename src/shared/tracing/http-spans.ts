import { Span, trace } from '@opentelemetry/api';

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
  if (route === 'unmatched') return;
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}
