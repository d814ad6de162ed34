import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { exportTo, OtlpReceiver, ReceivedSpan } from '../harness/otlp';
import { waitFor } from '../harness/wait';

const SCRIPT = path.resolve(__dirname, '../harness/post-json-traced.mjs');
const CLIENT = 3;
const ERROR = 2;

interface Sent {
  traceId?: string;
  parent?: string;
  status?: number;
  error?: string;
}

/**
 * The roles' own POSTs to each other (`postJson`: a task to its dispatcher, a callback or a
 * progress report to the controller), sent by the build with the SDK running and its spans
 * exported to a receiver in a process of its own: one HTTP client span each, made by the
 * project and never a second one by the fetch instrumentation, and the `traceparent` the other
 * side gets names that span.
 */
describe('HTTP client spans of the roles\' own requests', () => {
  let receiver: OtlpReceiver;
  let server: Server;
  let base: string;
  let refused: string;
  const seen: IncomingHttpHeaders[] = [];
  let sent: Sent[];
  let spans: ReceivedSpan[];

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    server = createServer((request, response) => {
      seen.push(request.headers);
      request.resume();
      request.on('end', () => {
        response.statusCode = request.url === '/busy' ? 503 : 201;
        response.setHeader('content-type', 'application/json');
        response.end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    refused = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/tasks`;
    closed.close();

    const posts = [{ url: `${base}/tasks` }, { url: `${base}/busy` }, { url: refused }, { url: `${base}/tasks`, outside: true }];
    const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, JSON.stringify(posts)], { env: { ...process.env, ...exportTo(receiver), OTEL_SERVICE_NAME: 'spec' } });
    sent = stdout.trim().split('\n').map((line) => JSON.parse(line) as Sent);
    spans = await waitFor(async () => {
      const received = await receiver.spans();
      return received.filter((span) => span.name === 'parent').length >= 3 ? received : null;
    }, 10_000, 'the three parent spans');
  });

  afterAll(async () => {
    server?.close();
    await receiver?.stop();
  });

  const clientSpansOf = (traceId: string | undefined) => spans.filter((span) => span.traceId === traceId && span.kind === CLIENT);

  it('records an answered request as one client span, and sends its context', () => {
    const [answered] = sent;
    expect(answered).toMatchObject({ status: 201 });
    const client = clientSpansOf(answered.traceId);
    expect(client).toEqual([expect.objectContaining({
      name: 'POST', scope: 'agent-task-http', parentSpanId: answered.parent, status: 0,
      attributes: { 'http.request.method': 'POST', 'url.full': `${base}/tasks`, 'server.address': '127.0.0.1', 'server.port': Number(new URL(base).port), 'http.response.status_code': 201 },
    })]);
    expect(seen[0].traceparent).toBe(`00-${answered.traceId}-${client[0].spanId}-01`);
    expect(spans.filter((span) => span.scope === '@opentelemetry/instrumentation-undici')).toEqual([]);
  });

  it('marks an answer from 400 on as an error, with its status as the error type', () => {
    const busy = sent[1];
    expect(busy).toMatchObject({ status: 503 });
    expect(clientSpansOf(busy.traceId)).toEqual([expect.objectContaining({ status: ERROR, attributes: expect.objectContaining({ 'http.response.status_code': 503, 'error.type': '503' }) })]);
  });

  it('marks a request that got no answer as an error, with the socket error as the error type', () => {
    const unanswered = sent[2];
    expect(unanswered.error).toBeDefined();
    const [client] = clientSpansOf(unanswered.traceId);
    expect(client).toMatchObject({ status: ERROR, attributes: expect.objectContaining({ 'url.full': refused, 'error.type': 'ECONNREFUSED' }) });
    expect(client.attributes['http.response.status_code']).toBeUndefined();
  });

  it('makes no span and sends no context outside every trace', () => {
    expect(sent[3]).toEqual({ status: 201 });
    expect(seen.map((headers) => headers.traceparent)).toEqual([expect.any(String), expect.any(String), undefined]);
    expect(spans.filter((span) => span.kind === CLIENT)).toHaveLength(3);
  });
});
