import { spawn, ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import { Client } from 'pg';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { freshDatabaseUrl } from '../harness/database';
import { http } from '../harness/http';
import { freePort } from '../harness/ports';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
const secrets = {
  API_TOKEN: 'operator-token-that-must-not-be-logged',
  SECRET_KEY: 'secret-key-that-must-not-be-logged',
  CALLBACK_SIGNING_KEY: 'signing-key-that-must-not-be-logged',
  DISPATCHER_API_KEY: 'dispatcher-api-key-that-must-not-be-logged',
  API_KEY: 'api-key-that-must-not-be-logged',
  AGENT_KEY: 'agent-key-that-must-not-be-logged',
};

describe('logs', () => {
  let server: ChildProcess;
  let output = '';
  let controller: string;
  let dispatcher: string;
  let databaseUrl: string;

  beforeAll(async () => {
    const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
    controller = `http://127.0.0.1:${controllerPort}`;
    dispatcher = `http://127.0.0.1:${dispatcherPort}`;
    databaseUrl = await freshDatabaseUrl();
    server = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH!, ...secrets, LOG_LEVEL: 'info', DATABASE_URL: databaseUrl,
        DATA_DIR: fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR!, 'logs-')),
        CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    for (let attempt = 0; attempt < 200; attempt++) {
      if ((await http('GET', `${dispatcher}/health`).catch(() => ({ status: 0 }))).status === 200) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`server did not start:\n${output}`);
  });

  afterAll(() => server?.kill('SIGTERM'));

  it('are JSON lines with a request id, and never hold a credential', async () => {
    await http('GET', `${controller}/api/v1/dispatchers/?token=query-secret`, {
      headers: { authorization: `Token ${secrets.API_TOKEN}`, 'x-request-id': 'req-logged-1' },
    });
    await http('GET', `${controller}/api/v1/tasks/`, { headers: { authorization: 'Token wrong-token-value-not-logged' } });
    await http('GET', `${dispatcher}/tasks`, { headers: { 'x-api-key': secrets.API_KEY } });
    await http('POST', `${dispatcher}/agent/checkin`, {
      headers: { 'x-agent-key': secrets.AGENT_KEY },
      json: { task_id: '00000000-0000-4000-8000-000000000000' },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));

    const lines = output.trim().split('\n');
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const request = records.find((record) => record.request_id === 'req-logged-1' && record.msg === 'request completed');
    expect(request).toMatchObject({ level: 'info', role: 'controller', method: 'GET', status: 200, duration_ms: expect.any(Number) });
    expect(request!.url).toBe('/api/v1/dispatchers/?token=[redacted]');
    expect(records.filter((record) => record.msg === 'request completed' && record.role === 'dispatcher')).toHaveLength(2);
    // Boot lines name their role, and no line names one twice.
    for (const role of ['controller', 'dispatcher']) {
      expect(records.find((record) => String(record.msg).startsWith(`${role} listening`))).toMatchObject({ role });
    }
    expect(lines.filter((line) => (line.match(/"role":/g) ?? []).length > 1)).toEqual([]);
    for (const value of [...Object.values(secrets), 'query-secret', 'wrong-token-value-not-logged']) {
      expect(output).not.toContain(value);
    }
  });

  it('answer an unexpected failure with 500 and an error id, whose stack is only in the log', async () => {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    await db.query('ALTER TABLE controller.dispatchers RENAME TO dispatchers_away');
    try {
      const answer = await http('GET', `${controller}/api/v1/dispatchers/`, { headers: { authorization: `Token ${secrets.API_TOKEN}` } });
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual({ code: 'server_error', detail: expect.stringMatching(/^Internal server error \(error id [0-9a-f-]{36}\)\.$/), error_id: expect.any(String) });
      expect(answer.text).not.toContain('dispatchers_away');
      expect(answer.text).not.toContain(' at ');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const logged = output.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>)
        .find((record) => record.errorId === answer.body.error_id);
      // Both roles run in this process: the line names the controller, whose path failed.
      expect(logged).toMatchObject({ level: 'error', role: 'controller', msg: 'Unhandled error', path: '/api/v1/dispatchers/' });
      expect(logged!.err.stack).toContain('dispatchers');
      // Its access line is an error line too, under the same request id.
      const access = output.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>)
        .find((record) => record.msg === 'request completed' && record.request_id === logged!.request_id);
      expect(access).toMatchObject({ level: 'error', role: 'controller', method: 'GET', url: '/api/v1/dispatchers/', status: 500 });
    } finally {
      await db.query('ALTER TABLE controller.dispatchers_away RENAME TO dispatchers');
      await db.end();
    }
  });

  it('log a request whose client left before its answer as aborted, on the hot lane and through Express alike, and leave passing probes out', async () => {
    const before = output.length;
    await http('GET', `${controller}/health/`);
    await http('GET', `${dispatcher}/livez`);
    const records = () => output.slice(before).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>);
    // Task creation and webhooks are answered on the hot lane, workflows by the Nest route.
    for (const path of ['/api/v1/tasks/', '/api/v1/webhooks/', '/api/v1/workflows/']) {
      const id = `req-left-early-${path.split('/')[3]}`;
      // Half a body, then the connection closed: the server never answers it.
      const socket = net.connect(Number(new URL(controller).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Request-Id: ${id}\r\nContent-Length: 1000\r\n\r\n{"agent_`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.destroy();
      for (let attempt = 0; attempt < 50 && !records().some((record) => record.request_id === id); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      const lines = records().filter((record) => record.request_id === id);
      expect(lines).toEqual([expect.objectContaining({ level: 'info', role: 'controller', msg: 'request aborted', method: 'POST', url: path })]);
    }
    expect(records().filter((record) => /^\/(health|livez)/.test(String(record.url ?? '')))).toEqual([]);
  });
});
