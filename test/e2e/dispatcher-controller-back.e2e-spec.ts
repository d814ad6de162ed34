import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

interface Answered { path: string; status: number; at: number }

/** A controller whose heartbeat and callback endpoints can be made to fail (503) and recover. */
async function startFlakyController() {
  const answered: Answered[] = [];
  const state = { heartbeatDown: false, callbacksDown: false };
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '';
      const down = path.includes('/callback/') ? state.callbacksDown : path.includes('/heartbeat/') && state.heartbeatDown;
      const status = down ? 503 : path.endsWith('/checkin/') ? 201 : 200;
      answered.push({ path, status, at: Date.now() });
      const body = path.endsWith('/checkin/') ? { status: 'ok', dispatcher_guid: '6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11' } : { status: 'ok' };
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    state,
    answered,
    callbacks: () => answered.filter((call) => call.path.includes('/callback/')),
    heartbeats: () => answered.filter((call) => call.path.includes('/heartbeat/')),
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('callbacks after a controller outage', () => {
  let controller: Awaited<ReturnType<typeof startFlakyController>>;
  let system: TestSystem;

  beforeAll(async () => {
    controller = await startFlakyController();
    system = await startTestSystem({ role: 'dispatcher', env: { CONTROLLER_URL: controller.url, CONTROLLER_TOKEN: 'operator-token' } });
  });
  afterAll(async () => {
    await system?.close();
    await controller?.close();
  });

  it('go as soon as the heartbeat is answered again, not when their backoff ends', async () => {
    await waitFor(() => controller.heartbeats().length > 0, 10_000, 'a first heartbeat');
    controller.state.callbacksDown = true;
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '0' } });
    request.callback_url = `${controller.url}/api/v1/tasks/${request.task_id}/callback/`;
    expect((await taskApi(system).create(request)).status).toBe(201);

    // Five failed attempts: the next one is 8 to 16 s away.
    await waitFor(() => controller.callbacks().length >= 5, 30_000, 'five failed callback attempts', 20);
    const fifthFailure = controller.callbacks()[4].at;
    controller.state.heartbeatDown = true;
    await waitFor(() => controller.heartbeats().some((call) => call.status === 503), 5_000, 'a failed heartbeat', 20);
    controller.state.heartbeatDown = false;
    controller.state.callbacksDown = false;

    const delivered = await waitFor(() => controller.callbacks().find((call) => call.status === 200), 20_000, 'the callback delivered', 20);
    expect(delivered.at - fifthFailure).toBeLessThan(6_000);
    expect(controller.callbacks().filter((call) => call.status === 200)).toHaveLength(1);
    expect((await taskApi(system).get(request.task_id)).body.data.callback).toMatchObject({ state: 'delivered' });
  }, 60_000);
});
