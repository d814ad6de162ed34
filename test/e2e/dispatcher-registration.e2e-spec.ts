import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { http } from '../harness/http';
import { taskApi, waitFor } from '../harness/dispatcher';
import { startTestSystem } from '../harness/system';

jest.setTimeout(60_000);

interface Call { path: string; headers: IncomingMessage['headers']; body: any }

/** The controller's registration endpoints as a recording server; `forget()` makes the next heartbeat 404. */
async function startFakeController() {
  const calls: Call[] = [];
  let forgotten = false;
  const server: Server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      const body = request.headers['content-type']?.includes('json') ? JSON.parse(raw) : Object.fromEntries(new URLSearchParams(raw));
      calls.push({ path: request.url ?? '', headers: request.headers, body });
      const reply = (status: number, json: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      if (request.url === '/api/v1/oauth/token/') return reply(200, { access_token: 'access-1', token_type: 'Bearer', expires_in: 3600 });
      if (request.url === '/api/v1/dispatchers/checkin/') {
        forgotten = false;
        return reply(201, { status: 'ok', action: 'created', dispatcher_guid: '6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11', dispatcher_slug: 'edge' });
      }
      if (forgotten) return reply(404, { detail: 'Unknown dispatcher.', code: 'not_found' });
      reply(200, { status: 'ok' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    of: (path: string) => calls.filter((call) => call.path === path),
    forget: () => (forgotten = true),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('dispatcher registration with a controller', () => {
  it('checks in with a Token, heartbeats every interval and checks in again after a 404', async () => {
    const controller = await startFakeController();
    const system = await startTestSystem({
      role: 'dispatcher',
      env: { CONTROLLER_URL: controller.url, CONTROLLER_TOKEN: 'operator-token', DISPATCHER_NAME: 'edge', DISPATCHER_LABELS: '{"zone":"a"}' },
    });
    try {
      await waitFor(async () => controller.of('/api/v1/dispatchers/heartbeat/').length >= 2, 10_000, 'two heartbeats');
      const [checkin] = controller.of('/api/v1/dispatchers/checkin/');
      expect(checkin.headers.authorization).toBe('Token operator-token');
      expect(checkin.body).toEqual({
        name: 'edge', endpoint_url: system.dispatcherUrl, cloud: 'local', backends: ['local'], labels: { zone: 'a' },
        heartbeat_interval_seconds: 1, api_key: system.apiKey,
      });
      expect(controller.of('/api/v1/dispatchers/heartbeat/')[0].body).toEqual({
        dispatcher_guid: '6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11', active_tasks: 0, capacity: 10,
      });
      controller.forget();
      await waitFor(async () => controller.of('/api/v1/dispatchers/checkin/').length >= 2, 10_000, 'a second check-in');
    } finally {
      await system.close();
      await controller.close();
    }
  });

  it('gets an OAuth token with client credentials and sends it as Bearer', async () => {
    const controller = await startFakeController();
    const system = await startTestSystem({
      role: 'dispatcher',
      env: { CONTROLLER_URL: controller.url, CONTROLLER_CLIENT_ID: 'client-1', CONTROLLER_CLIENT_SECRET: 'secret-1' },
    });
    try {
      await waitFor(async () => controller.of('/api/v1/dispatchers/heartbeat/').length >= 1, 10_000, 'a heartbeat');
      expect(controller.of('/api/v1/oauth/token/')[0].body).toMatchObject({ grant_type: 'client_credentials', client_id: 'client-1', client_secret: 'secret-1' });
      expect(controller.of('/api/v1/dispatchers/checkin/')[0].headers.authorization).toBe('Bearer access-1');
      expect(controller.of('/api/v1/oauth/token/')).toHaveLength(1);
    } finally {
      await system.close();
      await controller.close();
    }
  });

  it('keeps running when the controller cannot be reached', async () => {
    const system = await startTestSystem({ role: 'dispatcher', env: { CONTROLLER_URL: 'http://127.0.0.1:9', CONTROLLER_TOKEN: 't' } });
    try {
      expect((await http('GET', `${system.dispatcherUrl}/health`)).status).toBe(200);
    } finally {
      await system.close();
    }
  });

  it('registers itself as "local" in the all role, and runs its controller\'s tasks end to end', async () => {
    const system = await startTestSystem({ role: 'all' });
    const controller = (method: string, path: string, json?: unknown) =>
      http(method, `${system.controllerUrl}${path}`, { json, headers: { Authorization: `Token ${system.apiToken}` } });
    try {
      const listed = await waitFor(async () => {
        const answer = await controller('GET', '/api/v1/dispatchers/');
        const items = Array.isArray(answer.body) ? answer.body : (answer.body?.results ?? []);
        return items.find((item: { name: string; state: string }) => item.name === 'local' && item.state === 'online');
      }, 10_000, 'the local dispatcher');
      expect(listed).toMatchObject({ name: 'local', backends: ['local'] });

      // Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
      const created = await controller('POST', '/api/v1/tasks/', {
        agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, brief: { question: 'ping?' }, timeout_seconds: 60,
      });
      expect(created.status).toBe(201);
      const guid: string = created.body.guid;
      const finished = await waitFor(async () => {
        const answer = await controller('GET', `/api/v1/tasks/${guid}/`);
        return ['completed', 'failed', 'timed_out', 'cancelled'].includes(answer.body.status) && answer.body;
      }, 30_000, 'the controller task to finish');
      expect(finished.status).toBe('completed');
      const onDispatcher = (await taskApi(system).get(guid)).body.data;
      expect(onDispatcher).toMatchObject({ status: 'completed', callback: { state: 'delivered' } });
      expect(onDispatcher.callback_url).toBe(`${system.controllerUrl}/api/v1/tasks/${guid}/callback/`);
    } finally {
      await system.close();
    }
  });
});
