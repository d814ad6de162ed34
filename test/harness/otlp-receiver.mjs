// An OTLP/HTTP trace receiver in a process of its own: takes `http/protobuf` (the SDK's default)
// and `http/json` exports at POST /v1/traces and serves every span received so far at GET /spans, flattened.
// Prints its port on stdout once it listens. With OTLP_RECEIVER_COUNT_ONLY=true it decodes
// each export as a collector would but keeps only the count (GET /count), for benchmarks.
import { createServer } from 'node:http';
import { decodeTraceRequest } from './otlp-trace-proto.mjs';

const spans = [];
const countOnly = process.env.OTLP_RECEIVER_COUNT_ONLY === 'true';
let received = 0;

function valueOf(any) {
  if (!any) return null;
  if ('stringValue' in any) return any.stringValue;
  if ('intValue' in any) return Number(any.intValue);
  if ('doubleValue' in any) return any.doubleValue;
  if ('boolValue' in any) return any.boolValue;
  if ('arrayValue' in any) return (any.arrayValue.values ?? []).map(valueOf);
  return null;
}

const attributesOf = (list = []) => Object.fromEntries(list.map((entry) => [entry.key, valueOf(entry.value)]));

function take(request) {
  if (countOnly) {
    for (const resourceSpans of request.resourceSpans ?? []) for (const scopeSpans of resourceSpans.scopeSpans ?? []) received += scopeSpans.spans?.length ?? 0;
    return;
  }
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          service: resource['service.name'],
          scope: scopeSpans.scope?.name,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || null,
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId, attributes: attributesOf(link.attributes) })),
          status: span.status?.code ?? 0,
        });
        received += 1;
      }
    }
  }
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method === 'POST' && request.url === '/v1/traces') {
      const type = String(request.headers['content-type']);
      const body = Buffer.concat(chunks);
      // An empty ExportTraceServiceResponse in the request's own encoding: every span accepted.
      if (type.startsWith('application/x-protobuf')) {
        take(decodeTraceRequest(body));
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else if (type.startsWith('application/json')) {
        take(JSON.parse(body.toString('utf8')));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        response.writeHead(415).end();
      }
    } else if (request.method === 'GET' && request.url === '/count') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ spans: received }));
    } else if (request.method === 'GET' && request.url === '/spans') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(spans));
    } else if (request.method === 'DELETE' && request.url === '/spans') {
      spans.length = 0;
      response.writeHead(204).end();
    } else {
      response.writeHead(404).end();
    }
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
