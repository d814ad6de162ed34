import { createHmac } from 'node:crypto';
import { http, HttpAnswer } from './http';
import { waitFor } from './wait';
import { TestSystem } from './system';

/** Builders for the controller's dispatcher and task endpoints. */
export function operator(system: TestSystem): Record<string, string> {
  return { authorization: `Token ${system.apiToken}` };
}

export function checkInDispatcher(system: TestSystem, fields: Record<string, unknown>): Promise<HttpAnswer> {
  return http('POST', `${system.controllerUrl}/api/v1/dispatchers/checkin/`, {
    headers: operator(system),
    json: { cloud: 'local', backends: ['local'], labels: {}, heartbeat_interval_seconds: 30, ...fields },
  });
}

export function makeTask(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    agent_image: 'agent-examples/echo',
    runtime_target: { type: 'local', namespace: '' },
    resources: { cpu: '500m', memory: '256Mi' },
    env: { GREETING: 'hello' },
    ports: [{ container_port: 8080, protocol: 'tcp' }],
    timeout_seconds: 600,
    brief: { prompt: 'say hello' },
    ...overrides,
  };
}

export function createTask(system: TestSystem, overrides: Record<string, unknown> = {}): Promise<HttpAnswer> {
  return http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(system), json: makeTask(overrides) });
}

export function getTask(system: TestSystem, guid: string): Promise<HttpAnswer> {
  return http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/`, { headers: operator(system) });
}

/** A callback or progress report as a dispatcher sends it: Bearer token, signed raw body. */
export function sendSigned(
  system: TestSystem,
  guid: string,
  kind: 'callback' | 'progress',
  body: unknown,
  options: { token: string; key?: string | null; signature?: string },
): Promise<HttpAnswer> {
  const raw = JSON.stringify(body);
  const key = options.key === undefined ? system.config.callbackSigningKey : options.key;
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${options.token}` };
  if (options.signature !== undefined) headers['x-service-signature'] = options.signature;
  else if (key) headers['x-service-signature'] = `sha256=${createHmac('sha256', key).update(raw).digest('hex')}`;
  return http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/${kind}/`, { headers, body: raw });
}

/** `Authorization: Bearer` for a new OAuth client holding exactly `scopes`. */
export async function clientBearer(system: TestSystem, scopes: string[]): Promise<Record<string, string>> {
  const client = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, {
    headers: operator(system),
    json: { name: `client-${scopes.join('-') || 'none'}-${Math.random().toString(36).slice(2, 8)}`, scopes },
  });
  if (client.status !== 201) throw new Error(`client creation answered ${client.status}: ${client.text}`);
  const token = await http('POST', `${system.controllerUrl}/api/v1/oauth/token/`, {
    json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
  });
  if (token.status !== 200) throw new Error(`token request answered ${token.status}: ${token.text}`);
  return { authorization: `Bearer ${token.body.access_token}` };
}

/** Waits until the dispatch loop has moved the task past `pending`; answers the task then. */
export async function dispatchedTask(system: TestSystem, guid: string, timeoutMs = 20_000): Promise<HttpAnswer> {
  return waitFor(async () => {
    const task = await getTask(system, guid);
    return task.body.status !== 'pending' ? task : null;
  }, timeoutMs, `task ${guid} to leave pending`, 20);
}

/** POST /tasks/ (answered pending), then the task once the dispatch loop has moved it on. */
export async function createDispatchedTask(system: TestSystem, overrides: Record<string, unknown> = {}): Promise<HttpAnswer> {
  const created = await createTask(system, overrides);
  if (created.status !== 201) throw new Error(`task creation answered ${created.status}: ${created.text}`);
  if (created.body.status !== 'pending') throw new Error(`a new task is answered pending, not ${created.body.status}`);
  return dispatchedTask(system, created.body.guid);
}
