import { createHmac, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { http, HttpAnswer } from './http';
import { TestSystem } from './system';
import { waitFor } from './wait';

/** A valid task request for the `local` backend; override any field. */
export function makeTaskRequest(overrides: Record<string, unknown> = {}): Record<string, any> {
  const taskId = randomUUID();
  return {
    task_id: taskId,
    agent_image: 'agent-examples/echo',
    runtime_target: { type: 'local', namespace: '' },
    resources: { cpu: '500m', memory: '256Mi' },
    env: { GREETING: 'hello' },
    ports: [{ container_port: 8080, protocol: 'tcp' }],
    brief_key: `briefs/${taskId}.json`,
    callback_url: `http://127.0.0.1:9/api/v1/tasks/${taskId}/callback/`,
    callback_token: `token-${taskId}`,
    timeout_seconds: 60,
    ...overrides,
  };
}

export function taskApi(system: TestSystem) {
  const headers = { 'X-API-Key': system.apiKey };
  const base = system.dispatcherUrl;
  return {
    create: (body: unknown) => http('POST', `${base}/tasks`, { json: body, headers }),
    get: (taskId: string) => http('GET', `${base}/tasks/${taskId}`, { headers }),
    list: (query = '') => http('GET', `${base}/tasks${query}`, { headers }),
    cancel: (taskId: string) => http('POST', `${base}/tasks/${taskId}/cancel`, { headers }),
    logs: (taskId: string, query = '') => http('GET', `${base}/tasks/${taskId}/logs${query}`, { headers }),
  };
}

export function agentKeyOf(system: TestSystem, taskId: string): string {
  return createHmac('sha256', system.agentKey).update(taskId).digest('hex');
}

export function agentApi(system: TestSystem, key: string) {
  const headers = { 'X-Agent-Key': key };
  const base = system.dispatcherUrl;
  return {
    checkin: (body: unknown) => http('POST', `${base}/agent/checkin`, { json: body, headers }),
    progress: (body: unknown) => http('POST', `${base}/agent/progress`, { json: body, headers }),
    checkback: (body: unknown) => http('POST', `${base}/agent/checkback`, { json: body, headers }),
    read: (key2: string) => http('GET', `${base}/agent/objects/${key2}`, { headers }),
    write: (key2: string, body: string) =>
      http('PUT', `${base}/agent/objects/${key2}`, { body, headers: { ...headers, 'content-type': 'application/octet-stream' } }),
  };
}

export { waitFor };

/** Waits until the task is in one of `statuses` and returns it. */
export function waitForStatus(system: TestSystem, taskId: string, statuses: string[], timeoutMs?: number): Promise<any> {
  const api = taskApi(system);
  return waitFor(async () => {
    const answer: HttpAnswer = await api.get(taskId);
    return statuses.includes(answer.body?.data?.status) ? answer.body.data : null;
  }, timeoutMs, `task ${taskId} to be ${statuses.join(' or ')}`);
}

export interface ReceivedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
  answeredWith: number;
  at: number;
}

/** How the receiver answers one callback: a status, or a status with headers (`Retry-After`), after `delayMs`. */
export type ReceiverAnswer = number | { status: number; headers: Record<string, string>; delayMs?: number };

/**
 * The controller's side of callbacks, as a plain HTTP server on loopback: it records
 * every request and answers with the next status of `answers` (then 200).
 */
export async function startCallbackReceiver(answers: ReceiverAnswer[] = [], port = 0) {
  const received: ReceivedRequest[] = [];
  const queue = [...answers];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const next = (request.url?.includes('/callback') && queue.shift()) || 200;
      const answer = typeof next === 'number' ? { status: next, headers: {}, delayMs: 0 } : next;
      received.push({ path: request.url ?? '', headers: request.headers, raw, body: raw ? JSON.parse(raw) : null, answeredWith: answer.status, at: Date.now() });
      setTimeout(() => {
        response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end('{"status":"ok"}');
      }, answer.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actualPort = (server.address() as AddressInfo).port;
  return {
    port: actualPort,
    received,
    callbackUrl: (taskId: string) => `http://127.0.0.1:${actualPort}/api/v1/tasks/${taskId}/callback/`,
    callbacks: () => received.filter((request) => request.path.endsWith('/callback/')),
    progress: () => received.filter((request) => request.path.endsWith('/progress/')),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export function expectedSignature(system: TestSystem, raw: string): string {
  return `sha256=${createHmac('sha256', system.config.callbackSigningKey!).update(raw).digest('hex')}`;
}
