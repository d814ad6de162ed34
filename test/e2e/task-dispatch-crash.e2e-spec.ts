import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { makeTask } from '../harness/controller-tasks';
import { taskApi } from '../harness/dispatcher';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { startTestSystem, testEnv, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

interface Forwarded {
  path: string;
  body: string;
  status: number | null;
}

/**
 * Passes the controller's requests on to the real dispatcher, except that the answer to the
 * first task request is never delivered: the dispatcher has the task, the controller does
 * not know it was taken.
 */
async function answerSwallowingProxy(target: string) {
  const forwarded: Forwarded[] = [];
  let swallowed: () => void = () => undefined;
  const firstSwallowed = new Promise<void>((resolve) => (swallowed = resolve));
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const record: Forwarded = { path: request.url ?? '', body, status: null };
      forwarded.push(record);
      const answer = await fetch(`${target}${request.url}`, { method: request.method, headers: request.headers as Record<string, string>, body: body || undefined });
      record.status = answer.status;
      const text = await answer.text();
      if (record.path === '/tasks' && forwarded.filter((r) => r.path === '/tasks').length === 1) return swallowed();
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    firstSwallowed,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('a controller killed after a dispatcher took a task and before it recorded the dispatch', () => {
  let dispatcher: TestSystem;
  let controller: RoleProcess;
  let proxy: Awaited<ReturnType<typeof answerSwallowingProxy>>;

  afterAll(async () => {
    await controller?.stop();
    await proxy?.close();
    await dispatcher?.close();
  });

  it('sends the same request again after a restart, and the task runs exactly once', async () => {
    dispatcher = await startTestSystem({ role: 'dispatcher', storage: 's3' });
    proxy = await answerSwallowingProxy(dispatcher.dispatcherUrl);
    const env = await testEnv({
      role: 'controller',
      storage: 's3',
      env: {
        DISPATCH_CLAIM_LEASE_SECONDS: '1',
        TASK_DISPATCH_RETRY_SECONDS: '1',
        CALLBACK_SIGNING_KEY: dispatcher.config.callbackSigningKey ?? '',
        S3_BUCKET: dispatcher.config.s3!.bucket,
      },
    });
    const controllerUrl = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
    const operator = { authorization: `Token ${env.API_TOKEN}` };
    controller = await new RoleProcess(env, `${controllerUrl}/health/`).start();
    const checkin = await http('POST', `${controllerUrl}/api/v1/dispatchers/checkin/`, {
      headers: operator,
      json: { name: 'crash', endpoint_url: proxy.url, backends: ['local'], api_key: dispatcher.apiKey, heartbeat_interval_seconds: 3600 },
    });
    expect(checkin.status).toBe(200);

    const created = await http('POST', `${controllerUrl}/api/v1/tasks/`, {
      headers: operator,
      json: makeTask({ agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '6' }, timeout_seconds: 120 }),
    });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('pending');
    const guid: string = created.body.guid;

    await proxy.firstSwallowed;
    await controller.kill();
    expect((await taskApi(dispatcher).get(guid)).body.data.status).toMatch(/^(pending|starting|running)$/);

    await controller.start();
    const done = await waitFor(async () => {
      const task = await http('GET', `${controllerUrl}/api/v1/tasks/${guid}/`, { headers: operator });
      return task.body.status === 'completed' ? task : null;
    }, 40_000, 'the task to be closed by its callback');
    expect(done.body).toMatchObject({ dispatcher: 'crash', dispatch_attempts: 2, result: { result_metadata: { slept_seconds: 6 } } });

    // The second request was the first one again, and the dispatcher answered it as a repeat.
    const requests = proxy.forwarded.filter((request) => request.path === '/tasks');
    expect(requests.map((request) => request.status)).toEqual([201, 200]);
    expect(requests[1].body).toBe(requests[0].body);
    const onDispatcher = (await taskApi(dispatcher).list('?limit=500')).body.data.tasks.filter((task: { task_id: string }) => task.task_id === guid);
    expect(onDispatcher).toHaveLength(1);
    expect(onDispatcher[0]).toMatchObject({ status: 'completed', callback: { state: 'delivered' } });
  }, 90_000);
});
