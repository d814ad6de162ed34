import * as http from 'node:http';
import { operator } from '../harness/controller-tasks';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(60_000);

/** A GET over `agent` answering its status and whether it went over a connection used before. */
function get(url: string, agent?: http.Agent): Promise<{ status: number; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, reusedSocket: request.reusedSocket }));
    });
    request.on('error', reject);
  });
}

/** An event stream on a connection of its own, held open until `close` destroys it. */
function openStream(url: string, headers: Record<string, string>): Promise<{ status: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent: new http.Agent() }, (response) => {
      response.resume();
      resolve({ status: response.statusCode ?? 0, close: () => request.destroy() });
    });
    request.on('error', reject);
  });
}

/**
 * Node's server limits as the README documents them (HTTP_* settings): an idle keep-alive
 * connection outlives Node's 5 s default, so a load balancer's pooled connection is not
 * closed under it, and a port takes HTTP_MAX_CONNECTIONS connections at most.
 */
describe('server time-outs and connection caps', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { HTTP_MAX_CONNECTIONS: '4' } });
  });
  afterAll(() => system?.close());

  it('keeps an idle keep-alive connection open past 5 s', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await get(`${system.controllerUrl}/livez`, agent)).toEqual({ status: 200, reusedSocket: false });
      await new Promise((resolve) => setTimeout(resolve, 6500));
      expect(await get(`${system.controllerUrl}/livez`, agent)).toEqual({ status: 200, reusedSocket: true });
    } finally {
      agent.destroy();
    }
  });

  it('closes connections beyond HTTP_MAX_CONNECTIONS at once and takes new ones when some close', async () => {
    const streams = await Promise.all([1, 2, 3, 4].map(() => openStream(`${system.controllerUrl}/api/v1/events/`, operator(system))));
    expect(streams.map((stream) => stream.status)).toEqual([200, 200, 200, 200]);
    await expect(get(`${system.controllerUrl}/livez`, new http.Agent())).rejects.toThrow(/socket hang up|ECONNRESET/);
    streams[0].close();
    await waitFor(async () => (await get(`${system.controllerUrl}/livez`, new http.Agent()).catch(() => ({ status: 0 }))).status === 200, 5000, 'a freed connection');
    for (const stream of streams.slice(1)) stream.close();
  });
});
