import { spawn } from 'node:child_process';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import * as path from 'node:path';

// The SDK as an agent loads it: its build in packages/agent-sdk/dist (`npm run build` first).
const SDK = path.resolve(__dirname, '../../packages/agent-sdk/dist/index.js');
const TASK_ID = '5d1f4c1e-8a8b-4c1e-9d55-0f7e1c2b3a4d';

/** An agent process that checks in, reports progress and checks back, then has nothing left to do. */
const AGENT = `
import { AgentClient } from ${JSON.stringify(SDK)};
const agent = AgentClient.fromEnv();
await agent.checkin();
await agent.progress(50, 'half way');
await agent.checkback({ status: 'completed' });
console.log('checked back');
`;

describe('an agent process using the SDK', () => {
  let server: Server;
  const calls: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        calls.push(request.url!);
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, data: { brief_key: '', env: {}, skills: [] } }));
      });
    });
    // Connections kept open on the server's side as long as the client keeps them.
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('ends on its own when its work is done: the connection it keeps alive does not hold it open', async () => {
    const env = { PATH: process.env.PATH, TASK_ID, AGENT_KEY: 'k', DISPATCHER_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    const child = spawn(process.execPath, ['--input-type=module', '-e', AGENT], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = await new Promise<number | string>((resolve) => {
      const stuck = setTimeout(() => {
        child.kill('SIGKILL');
        resolve('still running 10 s after it started');
      }, 10_000);
      child.once('exit', (code) => {
        clearTimeout(stuck);
        resolve(code ?? -1);
      });
    });
    expect({ exit, output: output.trim() }).toEqual({ exit: 0, output: 'checked back' });
    expect(calls).toEqual(['/agent/checkin', '/agent/progress', '/agent/checkback']);
  });
});
