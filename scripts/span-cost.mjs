#!/usr/bin/env node
// What the OpenTelemetry SDK itself costs a span, in a bare process: the floor beside which
// bench-tracing.mjs reads the server's tracing cost per request. The SDK is configured as the
// server configures it (NodeSDK, the standard OTEL_* variables, no instrumentation), and each
// span is made as the server's hot lane makes its HTTP server span: started with the eleven
// attributes of `withServerSpan`, made active for a call, given its status code and ended.
// Prints one JSON line: CPU microseconds (user + system of this process) per span for the
// start-to-end part alone and with the export (BatchSpanProcessor, OTLP/HTTP to the endpoint
// given) done, after a warm-up that is not counted.
//
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:<port>/v1/traces node scripts/span-cost.mjs [spans=50000]
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';

if (!process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) throw new Error('span-cost.mjs needs OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a receiver that answers)');
const spans = Number(process.argv[2] ?? 50_000);
process.env.OTEL_TRACES_SAMPLER ??= 'always_on';
process.env.OTEL_METRICS_EXPORTER ??= 'none';
process.env.OTEL_LOGS_EXPORTER ??= 'none';
process.env.OTEL_BSP_MAX_QUEUE_SIZE ??= '262144';

const { NodeSDK } = await import('@opentelemetry/sdk-node');
const api = await import('@opentelemetry/api');
const sdk = new NodeSDK({ instrumentations: [] });
sdk.start();
const tracer = api.trace.getTracer('span-cost');
const attributes = {
  'http.request.method': 'POST', 'http.route': '/api/v1/webhooks/', 'url.scheme': 'http', 'url.path': '/api/v1/webhooks/',
  'server.address': '127.0.0.1', 'server.port': 8080, 'client.address': '127.0.0.1', 'network.peer.address': '127.0.0.1',
  'network.peer.port': 50000, 'network.protocol.version': '1.1', 'user_agent.original': 'span-cost',
};

async function make(count) {
  for (let i = 0; i < count; i++) {
    const span = tracer.startSpan('POST /api/v1/webhooks/', { kind: api.SpanKind.SERVER, attributes });
    api.context.with(api.trace.setSpan(api.context.active(), span), () => undefined);
    span.setAttribute('http.response.status_code', 200);
    span.end();
    // The batch processor's timer and exports run between turns, as between a server's requests.
    if (i % 1000 === 999) await nextTurn();
  }
}

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

await make(Math.min(10_000, spans));
await sleep(6000);
const before = cpu();
await make(spans);
const made = cpu();
// The schedule delay (5 s by default) passes, so every span of the run is exported.
await sleep(6000);
const exported = cpu();
console.log(JSON.stringify({ spans, startToEndMicros: (made - before) / spans, withExportMicros: (exported - before) / spans }));
await sdk.shutdown();
