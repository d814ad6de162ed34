// Sends the POSTs named in argv[2] (JSON: [{url, outside?}]) with the build's `postJson`, each
// inside a span of its own ("parent") unless `outside`, with the SDK started from this process's
// OTEL_* settings as the server starts it; writes one JSON line per POST ({traceId, parent,
// status} or {error}), then flushes the spans. Used by http-client-spans.e2e-spec.ts.
import '../../dist/src/shared/tracing/register.js';
import api from '@opentelemetry/api';
import jsonPost from '../../dist/src/shared/http/json-post.js';
import sdk from '../../dist/src/shared/tracing/sdk.js';

const send = (url) => jsonPost.postJson(url, '{}', { 'user-agent': 'spec' }, 5_000).then(({ status }) => ({ status }), (error) => ({ error: error.name }));

for (const { url, outside } of JSON.parse(process.argv[2])) {
  const outcome = outside ? await send(url) : await api.trace.getTracer('spec').startActiveSpan('parent', async (span) => {
    const sent = await send(url);
    span.end();
    return { traceId: span.spanContext().traceId, parent: span.spanContext().spanId, ...sent };
  });
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}
await sdk.stopTracing();
