import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { AgentClient, AgentProtocolError } from './agent-client.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  /** The client's end of the connection the request came on. */
  port: number;
}

type Handler = (seen: Seen, response: ServerResponse) => void;

/** A real HTTP server on loopback that records requests and answers with `handler`. */
async function fakeDispatcher(handler: Handler): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body: Buffer.concat(chunks), port: request.socket.remotePort! };
      seen.push(entry);
      handler(entry, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const TASK_ID = '0b6a3e0c-2f43-4d7e-9a57-3f7f3b6c8a11';

describe('AgentClient', () => {
  let servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    servers = [];
  });

  async function clientFor(handler: Handler) {
    const dispatcher = await fakeDispatcher(handler);
    servers.push(dispatcher.server);
    const client = AgentClient.fromEnv({ TASK_ID, DISPATCHER_URL: `${dispatcher.url}/`, AGENT_KEY: 'k-123' }, { retryDelayMs: 5 });
    return { client, seen: dispatcher.seen };
  }

  it('names every missing variable when built from the environment', () => {
    expect(() => AgentClient.fromEnv({ TASK_ID })).toThrow(/DISPATCHER_URL, AGENT_KEY/);
  });

  it('sends TRACEPARENT and TRACESTATE from its environment as W3C headers on every call', async () => {
    const dispatcher = await fakeDispatcher((_s, r) => reply(r, 200, { ok: true, data: {} }));
    servers.push(dispatcher.server);
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const client = AgentClient.fromEnv({ TASK_ID, DISPATCHER_URL: dispatcher.url, AGENT_KEY: 'k-123', TRACEPARENT: traceparent, TRACESTATE: 'vendor=abc' });
    await client.checkin();
    await client.progress(50, 'half');
    expect(dispatcher.seen.map((seen) => [seen.headers.traceparent, seen.headers.tracestate])).toEqual([[traceparent, 'vendor=abc'], [traceparent, 'vendor=abc']]);
  });

  it('sends no trace headers without TRACEPARENT, or with a malformed one', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true, data: {} }));
    await client.checkin();
    const dispatcher = await fakeDispatcher((_s, r) => reply(r, 200, { ok: true, data: {} }));
    servers.push(dispatcher.server);
    await AgentClient.fromEnv({ TASK_ID, DISPATCHER_URL: dispatcher.url, AGENT_KEY: 'k', TRACEPARENT: 'not-a-trace' }).checkin();
    expect([seen[0].headers.traceparent, dispatcher.seen[0].headers.traceparent]).toEqual([undefined, undefined]);
  });

  it('checks in with the task id and the agent key and returns the brief key and env', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true, data: { brief_key: 'briefs/x.json', env: { A: '1' } } }));
    await expect(client.checkin()).resolves.toEqual({ brief_key: 'briefs/x.json', env: { A: '1' }, skills: [] });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/agent/checkin', headers: { 'x-agent-key': 'k-123', 'x-task-id': TASK_ID } });
    expect(JSON.parse(seen[0].body.toString())).toEqual({ task_id: TASK_ID });
  });

  it('sends progress and check-back bodies as the contract names them', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true }));
    await client.progress(50, 'half', { step: 2 });
    await client.checkback({ status: 'completed', result_key: client.resultKey('result.json'), result_metadata: { n: 1 } });
    expect(seen.map((s) => s.url)).toEqual(['/agent/progress', '/agent/checkback']);
    expect(JSON.parse(seen[0].body.toString())).toEqual({ task_id: TASK_ID, percentage: 50, message: 'half', data: { step: 2 } });
    expect(JSON.parse(seen[1].body.toString())).toEqual({
      task_id: TASK_ID, status: 'completed', result_key: `results/${TASK_ID}/result.json`, result_metadata: { n: 1 },
    });
  });

  it('reads and writes objects by key, keeping the slashes of the key in the path', async () => {
    const { client, seen } = await clientFor((s, r) => {
      if (s.method === 'GET') r.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([1, 2, 3]));
      else reply(r, 200, { ok: true });
    });
    await expect(client.readObject('briefs/a b.json')).resolves.toEqual(Buffer.from([1, 2, 3]));
    await client.writeObject(client.resultKey('out.json'), '{"x":1}', 'application/json');
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/agent/objects/briefs/a%20b.json' });
    expect(seen[1]).toMatchObject({ method: 'PUT', url: `/agent/objects/results/${TASK_ID}/out.json`, headers: { 'content-type': 'application/json' } });
    expect(seen[1].body.toString()).toBe('{"x":1}');
  });

  it('writes binary objects byte for byte, a slice of a larger buffer included', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true }));
    const bytes = randomBytes(70_000);
    await client.writeObject(client.resultKey('out.bin'), bytes.subarray(1_000, 66_000));
    expect(seen[0].headers['content-length']).toBe('65000');
    expect(seen[0].body.equals(bytes.subarray(1_000, 66_000))).toBe(true);
  });

  it('makes its calls over one kept-alive connection', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true, data: { brief_key: '', env: {} } }));
    await client.checkin();
    await client.progress(50);
    await client.checkback({ status: 'completed' });
    expect(seen.map((entry) => entry.url)).toEqual(['/agent/checkin', '/agent/progress', '/agent/checkback']);
    expect(new Set(seen.map((entry) => entry.port)).size).toBe(1);
  });

  it('gives up on a dispatcher that takes the request but never answers, after requestTimeoutMs', async () => {
    const { client, seen } = await clientFor(() => undefined);
    const impatient = new AgentClient({ taskId: TASK_ID, dispatcherUrl: client.dispatcherUrl, agentKey: 'k', retries: 0, requestTimeoutMs: 200 });
    const started = Date.now();
    await expect(impatient.progress(1)).rejects.toMatchObject({ code: 'unreachable', message: expect.stringContaining('no answer within 200 ms') });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(seen).toHaveLength(1);
  });

  it('retries 5xx answers with backoff and then succeeds', async () => {
    let calls = 0;
    const { client } = await clientFor((_s, r) => (++calls < 3 ? reply(r, 503, { ok: false }) : reply(r, 200, { ok: true })));
    await client.progress(10);
    expect(calls).toBe(3);
  });

  it('does not retry a refusal and reports its code and message', async () => {
    let calls = 0;
    const { client } = await clientFor((_s, r) => {
      calls += 1;
      reply(r, 409, { ok: false, error: { code: 'conflict', message: 'Task is already completed.' } });
    });
    const error = await client.checkback({ status: 'failed', error: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentProtocolError);
    expect(error).toMatchObject({ status: 409, code: 'conflict' });
    expect((error as Error).message).toContain('Task is already completed.');
    expect(calls).toBe(1);
  });

  it('gives up on an unreachable dispatcher after its retries with a clear error', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, {}));
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const unreachable = new AgentClient({ taskId: TASK_ID, dispatcherUrl: client.dispatcherUrl, agentKey: 'k', retries: 2, retryDelayMs: 1 });
    await expect(unreachable.checkin()).rejects.toMatchObject({ code: 'unreachable', message: expect.stringContaining('could not reach the dispatcher') });
    expect(seen).toHaveLength(0);
  });

  it('keeps trying through a dispatcher restart longer than a few retries', async () => {
    const { client, seen } = await clientFor((_s, r) => reply(r, 200, { ok: true, data: { brief_key: 'b', env: {} } }));
    const server = servers.pop()!;
    const port = Number(new URL(client.dispatcherUrl).port);
    await new Promise((resolve) => server.close(resolve));
    // Down for 1.5 s: four doubling waits from 50 ms (750 ms in all) would not have been enough.
    const patient = new AgentClient({ taskId: TASK_ID, dispatcherUrl: client.dispatcherUrl, agentKey: 'k', retryDelayMs: 50 });
    const answer = patient.checkin();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    servers.push(server);
    await expect(answer).resolves.toMatchObject({ brief_key: 'b' });
    expect(seen).toHaveLength(1);
  });

  it('gives up once retryForMs has passed', async () => {
    const { client } = await clientFor((_s, r) => reply(r, 503, { ok: false, error: { code: 'unavailable', message: 'Restarting.' } }));
    const started = Date.now();
    const bounded = new AgentClient({ taskId: TASK_ID, dispatcherUrl: client.dispatcherUrl, agentKey: 'k', retryForMs: 300, retryDelayMs: 50 });
    await expect(bounded.progress(1)).rejects.toMatchObject({ status: 503, code: 'unavailable' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('keeps trying past retryForMs until the task deadline (TASK_DEADLINE), then gives up', async () => {
    let down = true;
    const { client, seen } = await clientFor((_s, r) => (down ? reply(r, 503, { ok: false, error: { code: 'unavailable', message: 'Restarting.' } }) : reply(r, 200, { ok: true, data: {} })));
    const env = { TASK_ID, DISPATCHER_URL: client.dispatcherUrl, AGENT_KEY: 'k', TASK_DEADLINE: new Date(Date.now() + 1_500).toISOString() };
    const patient = AgentClient.fromEnv(env, { retryForMs: 100, retryDelayMs: 50 });
    setTimeout(() => (down = false), 600);
    await expect(patient.progress(1)).resolves.toBeUndefined();
    expect(seen.length).toBeGreaterThan(2);

    down = true;
    const started = Date.now();
    const late = AgentClient.fromEnv({ ...env, TASK_DEADLINE: new Date(Date.now() + 400).toISOString() }, { retryForMs: 100, retryDelayMs: 50 });
    await expect(late.progress(1)).rejects.toMatchObject({ status: 503, code: 'unavailable' });
    // Past retryForMs (100 ms, after which it would have given up at about 50 ms), never past
    // the deadline: how far past 100 ms depends on how long each refused request took.
    expect(Date.now() - started).toBeGreaterThan(150);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('gives the last 5xx as an error once the retries are spent', async () => {
    const { client } = await clientFor((_s, r) => reply(r, 500, { ok: false, error: { code: 'server_error', message: 'Boom.' } }));
    const limited = new AgentClient({ taskId: TASK_ID, dispatcherUrl: client.dispatcherUrl, agentKey: 'k', retries: 1, retryDelayMs: 1 });
    await expect(limited.progress(1)).rejects.toMatchObject({ status: 500, code: 'server_error' });
  });
});
