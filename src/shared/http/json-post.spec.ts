import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { failureOf, postJson } from './json-post';

describe('postJson', () => {
  let server: Server;
  let url: string;
  const seen: { method?: string; headers: IncomingMessage['headers']; body: string }[] = [];
  let answer: (request: IncomingMessage, response: ServerResponse) => void;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen.push({ method: request.method, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        answer(request, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => {
    seen.length = 0;
  });

  it('sends the body as JSON with the headers given, and answers the status and the body', async () => {
    answer = (_request, response) => response.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    const result = await postJson(`${url}/tasks`, '{"task_id":"t-1"}', { 'x-api-key': 'key-1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }, 5_000);
    expect(result).toEqual({ status: 201, retryAfter: null, text: '{"ok":true}' });
    expect(seen).toEqual([{ method: 'POST', body: '{"task_id":"t-1"}', headers: expect.objectContaining({ 'content-type': 'application/json', 'x-api-key': 'key-1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }) }]);
  });

  it('answers an error status with its Retry-After and body, as any other answer', async () => {
    answer = (_request, response) => response.writeHead(429, { 'retry-after': '7' }).end('{"ok":false,"error":{"message":"slow down"}}');
    expect(await postJson(`${url}/callback`, '{}', {}, 5_000)).toEqual({ status: 429, retryAfter: '7', text: '{"ok":false,"error":{"message":"slow down"}}' });
  });

  it('never follows a redirect: the 3xx is the answer, and nothing goes to the other address', async () => {
    answer = (request, response) => response.writeHead(307, { location: `${url}/elsewhere` }).end();
    const result = await postJson(`${url}/tasks`, '{"secret_env":{"A":"b"}}', {}, 5_000);
    expect(result.status).toBe(307);
    expect(seen.map((request) => request.body)).toEqual(['{"secret_env":{"A":"b"}}']);
  });

  it('rejects when nothing listens, named by the socket error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await postJson(`http://127.0.0.1:${port}/tasks`, '{}', {}, 5_000).then(() => null, (failure: unknown) => failure);
    expect(failureOf(error)).toBe('ECONNREFUSED');
  });

  it('rejects when no answer came within the time given, named TimeoutError', async () => {
    answer = () => undefined; // never answered
    const started = performance.now();
    const error = await postJson(`${url}/slow`, '{}', {}, 200).then(() => null, (failure: unknown) => failure);
    expect(failureOf(error)).toBe('TimeoutError');
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('failureOf', () => {
  it.each([
    ['a socket error', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'ECONNREFUSED'],
    ['an error whose cause is one', Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }), 'ECONNRESET'],
    ['a client error of its own kind', Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' }), 'SocketError'],
    ['a time-out', new DOMException('The operation was aborted due to timeout', 'TimeoutError'), 'TimeoutError'],
    ['no error at all', 'down', 'request failed'],
  ])('names %s', (_what, error, name) => {
    expect(failureOf(error)).toBe(name);
  });
});
