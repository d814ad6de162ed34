import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DispatcherClient } from '../../src/controller/tasks/dispatcher-client';
import { Dispatcher } from '../../src/controller/dispatchers/dispatchers.entity';
import { operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { waitFor } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(60_000);

/** An OAuth client holding dispatchers:write, with a live access token. */
async function dispatcherClient(system: TestSystem, name: string): Promise<{ clientId: string; headers: Record<string, string> }> {
  const client = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, { headers: operator(system), json: { name, scopes: ['dispatchers:write'] } });
  const token = await http('POST', `${system.controllerUrl}/api/v1/oauth/token/`, {
    json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
  });
  return { clientId: client.body.client_id, headers: { authorization: `Bearer ${token.body.access_token}` } };
}

const registration = (endpoint: string) => ({ name: 'edge', endpoint_url: endpoint, backends: ['local'], api_key: `key-of-${endpoint}` });

describe('dispatchers bound to who registered them', () => {
  let system: TestSystem;
  const url = (path: string) => `${system.controllerUrl}/api/v1/dispatchers/${path}`;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
  });
  afterAll(() => system?.close());

  it('refuses a check-in and a heartbeat under a taken name by another client, until an operator re-binds it', async () => {
    const owner = await dispatcherClient(system, 'edge owner');
    const intruder = await dispatcherClient(system, 'intruder');
    const first = await http('POST', url('checkin/'), { headers: owner.headers, json: registration('http://127.0.0.1:9001') });
    expect(first.status).toBe(200);

    const takeover = await http('POST', url('checkin/'), { headers: intruder.headers, json: registration('http://127.0.0.1:9666') });
    expect(takeover.status).toBe(409);
    expect(takeover.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('/api/v1/dispatchers/edge/rebind/') });
    const own = await http('POST', url('heartbeat/'), { headers: owner.headers, json: { dispatcher_guid: first.body.dispatcher_guid, active_tasks: 3, capacity: 7 } });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ status: 'ok', dispatcher_guid: first.body.dispatcher_guid, heartbeat_interval_seconds: expect.any(Number) });
    const beat = await http('POST', url('heartbeat/'), { headers: intruder.headers, json: { dispatcher_guid: first.body.dispatcher_guid, active_tasks: 0, capacity: 1 } });
    expect(beat.status).toBe(409);
    expect(beat.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('/api/v1/dispatchers/edge/rebind/') });
    // The refused heartbeat changed nothing: the owner's report stands.
    const kept = await http('GET', url('edge/'), { headers: operator(system) });
    expect(kept.body).toMatchObject({ endpoint_url: 'http://127.0.0.1:9001', bound_to: `client:${owner.clientId}`, active_tasks: 3, capacity: 7, state: 'online' });
    // An operator's heartbeat is taken for any dispatcher, and leaves the binding alone.
    expect((await http('POST', url('heartbeat/'), { headers: operator(system), json: { dispatcher_guid: first.body.dispatcher_guid, active_tasks: 2, capacity: 7 } })).status).toBe(200);
    expect((await http('GET', url('edge/'), { headers: operator(system) })).body).toMatchObject({ active_tasks: 2, bound_to: `client:${owner.clientId}` });

    // The owner itself checks in again freely.
    expect((await http('POST', url('checkin/'), { headers: owner.headers, json: registration('http://127.0.0.1:9002') })).status).toBe(200);

    // A client cannot re-bind; an operator can.
    expect((await http('POST', url('edge/rebind/'), { headers: owner.headers, json: { client_id: intruder.clientId } })).status).toBe(403);
    const rebound = await http('POST', url('edge/rebind/'), { headers: operator(system), json: { client_id: intruder.clientId } });
    expect(rebound.status).toBe(200);
    expect(rebound.body.bound_to).toBe(`client:${intruder.clientId}`);
    expect((await http('POST', url('checkin/'), { headers: intruder.headers, json: registration('http://127.0.0.1:9003') })).status).toBe(200);
    expect((await http('POST', url('checkin/'), { headers: owner.headers, json: registration('http://127.0.0.1:9004') })).status).toBe(409);

    // Unbound: whoever checks in next holds it.
    const released = await http('POST', url('edge/rebind/'), { headers: operator(system), json: {} });
    expect(released.body.bound_to).toBeNull();
    expect((await http('POST', url('checkin/'), { headers: owner.headers, json: registration('http://127.0.0.1:9005') })).status).toBe(200);
    expect((await http('GET', url('edge/'), { headers: operator(system) })).body.bound_to).toBe(`client:${owner.clientId}`);
    expect((await http('POST', url('edge/rebind/'), { headers: operator(system), json: { client_id: 'nope' } })).status).toBe(400);
  });

  it('lets an operator check in under any name without taking the binding', async () => {
    const owner = await dispatcherClient(system, 'ops owner');
    const name = { ...registration('http://127.0.0.1:9101'), name: 'ops-edge' };
    expect((await http('POST', url('checkin/'), { headers: owner.headers, json: name })).status).toBe(200);
    expect((await http('POST', url('checkin/'), { headers: operator(system), json: name })).status).toBe(200);
    expect((await http('GET', url('ops-edge/'), { headers: operator(system) })).body.bound_to).toBe(`client:${owner.clientId}`);
  });
});

describe('calls to dispatchers never follow redirects', () => {
  let target: Server;
  let redirector: Server;
  const reached: string[] = [];
  const address = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  beforeAll(async () => {
    target = createServer((request, response) => {
      reached.push(`${request.method} ${request.url}`);
      response.writeHead(200, { 'content-type': 'text/plain' }).end('what the other address holds');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    redirector = createServer((request, response) => response.writeHead(307, { location: `${address(target)}${request.url}` }).end());
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => target.close(resolve));
    await new Promise((resolve) => redirector.close(resolve));
  });

  it('answers a redirected submit as unavailable and a redirected log read as an error, sending nothing to the other address', async () => {
    const client = new DispatcherClient();
    const dispatcher = { endpointUrl: address(redirector) } as Dispatcher;
    const answer = await client.submitTask(dispatcher, 'api-key', { task_id: 'x' } as never);
    expect(answer).toMatchObject({ kind: 'unavailable', status: 307, message: expect.stringContaining('never followed') });
    await expect(client.taskLogs(dispatcher, 'api-key', 'x', {})).rejects.toThrow('307');
    await expect(client.taskLogs(dispatcher, 'api-key', 'x', { follow: true, signal: new AbortController().signal })).rejects.toThrow('307');
    expect(reached).toEqual([]);
  });
});

describe('the embedded dispatcher of the all role', () => {
  it('checks in with an OAuth client of its own limited to dispatchers:write, never the operator token', async () => {
    const system = await startTestSystem();
    try {
      const local = await waitFor(async () => {
        const answer = await http('GET', `${system.controllerUrl}/api/v1/dispatchers/local/`, { headers: operator(system) });
        return answer.status === 200 ? answer.body : null;
      }, 15_000, 'the local dispatcher');
      const clients = await http('GET', `${system.controllerUrl}/api/v1/oauth/clients/`, { headers: operator(system) });
      const own = (clients.body.results ?? clients.body).find((client: { name: string }) => client.name === 'embedded dispatcher');
      expect(own).toMatchObject({ scopes: ['dispatchers:write'] });
      expect(local.bound_to).toBe(`client:${own.client_id}`);

      // A restart reuses the same client rather than making another.
      await system.restart();
      const again = await http('GET', `${system.controllerUrl}/api/v1/oauth/clients/`, { headers: operator(system) });
      expect((again.body.results ?? again.body).filter((client: { name: string }) => client.name === 'embedded dispatcher')).toHaveLength(1);
    } finally {
      await system.close();
    }
  });
});
