import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { AgentClient } from './agent-client.js';

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const TASK_ID = '0b6a3e0c-2f43-4d7e-9a57-3f7f3b6c8a11';
const AGENT_ID = '5d1e0f6b-8a0a-4b7b-9d43-2f0c4f1d2e3a';

/** A real HTTP server on loopback speaking the claim and check-in of the agent protocol. */
async function dispatcherAnswering(claims: number[]): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      seen.push({ url: request.url!, headers: request.headers, body });
      const json = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      if (request.url!.startsWith('/agent/claim')) {
        if (claims.shift() === 204) response.writeHead(204).end();
        else json(200, { ok: true, data: { task_id: TASK_ID, agent_key: 'task-key' } });
      } else json(200, { ok: true, data: { brief_key: 'briefs/b.json', env: { A: '1' }, skills: [] } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('AgentClient in a warm pool', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('waits for its claim with the pool key, then checks in as the task with the per-task key', async () => {
    const dispatcher = await dispatcherAnswering([204, 200]);
    server = dispatcher.server;
    const agent = AgentClient.fromEnv({ DISPATCHER_URL: dispatcher.url, AGENT_KEY: 'pool-key', AGENT_POOL: 'echo', AGENT_ID }, { claimWaitSeconds: 1 });
    expect(agent.taskId).toBe('');
    await expect(agent.checkin()).resolves.toEqual({ brief_key: 'briefs/b.json', env: { A: '1' }, skills: [] });
    expect(agent.taskId).toBe(TASK_ID);
    expect(agent.resultKey('r.json')).toBe(`results/${TASK_ID}/r.json`);

    const [first, second, checkin] = dispatcher.seen;
    // A 204 (the wait ended with no task) is asked again.
    for (const claim of [first, second]) {
      expect(claim).toMatchObject({ url: '/agent/claim?wait_seconds=1', headers: { 'x-agent-key': 'pool-key' } });
      expect(claim.headers['x-task-id']).toBeUndefined();
      expect(JSON.parse(claim.body)).toEqual({ pool: 'echo', agent_id: AGENT_ID });
    }
    expect(checkin).toMatchObject({ url: '/agent/checkin', headers: { 'x-agent-key': 'task-key', 'x-task-id': TASK_ID } });
    expect(JSON.parse(checkin.body)).toEqual({ task_id: TASK_ID });
  });

  it('claims once however often it is asked', async () => {
    const dispatcher = await dispatcherAnswering([200]);
    server = dispatcher.server;
    const agent = AgentClient.fromEnv({ DISPATCHER_URL: dispatcher.url, AGENT_KEY: 'pool-key', AGENT_POOL: 'echo', AGENT_ID });
    const [a, b] = await Promise.all([agent.claim(), agent.claim()]);
    expect(a).toEqual({ task_id: TASK_ID, agent_key: 'task-key' });
    expect(b).toBe(a);
    expect(dispatcher.seen.filter((seen) => seen.url.startsWith('/agent/claim'))).toHaveLength(1);
  });

  it('runs cold unchanged when TASK_ID is set, and names what a pool agent lacks', async () => {
    const cold = AgentClient.fromEnv({ TASK_ID, DISPATCHER_URL: 'http://127.0.0.1:9', AGENT_KEY: 'k', AGENT_POOL: 'echo', AGENT_ID });
    expect(cold.pool).toBeUndefined();
    await expect(cold.claim()).resolves.toEqual({ task_id: TASK_ID, agent_key: 'k' });
    expect(() => AgentClient.fromEnv({ DISPATCHER_URL: 'http://127.0.0.1:9', AGENT_KEY: 'k', AGENT_POOL: 'echo' })).toThrow(/lacks AGENT_ID/);
    expect(() => AgentClient.fromEnv({ DISPATCHER_URL: 'http://127.0.0.1:9', AGENT_KEY: 'k' })).toThrow(/lacks TASK_ID/);
  });
});
