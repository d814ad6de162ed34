import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { OBJECT_STORAGE, ObjectStorage } from '../../src/shared/storage/object-storage';
import { http } from '../harness/http';
import { removeManagedContainers, requireContainerEngine, SHELL_AGENT_IMAGE } from '../harness/podman';
import { startTestSystem, TestSystem } from '../harness/system';
import { readUntil } from '../harness/wait';

interface ReceivedCallback {
  taskId: string;
  authorization?: string;
  body: Record<string, unknown>;
}

/** The controller's side of task callbacks: records every POST and answers 200. */
async function callbackReceiver(): Promise<{ url: string; server: Server; received: ReceivedCallback[] }> {
  const received: ReceivedCallback[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const taskId = /\/tasks\/([^/]+)\/callback/.exec(request.url ?? '')?.[1];
      if (taskId) received.push({ taskId, authorization: request.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, received };
}

/** Reads until `done` holds for what was read, and returns that; fails when it never does. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 40_000): Promise<T> {
  const value = await readUntil(read, done, timeoutMs, 250);
  if (!done(value)) throw new Error('Timed out waiting for the container engine');
  return value;
}

describe('tasks on the docker local engine (Podman)', () => {
  const dispatcherName = `atc-e2e-${randomBytes(4).toString('hex')}`;
  let docker: Docker;
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof callbackReceiver>>;

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    receiver = await callbackReceiver();
    system = await startTestSystem({
      role: 'dispatcher',
      env: { LOCAL_ENGINE: 'docker', DOCKER_HOST: engine.dockerHost, DISPATCHER_NAME: dispatcherName },
    });
  });
  afterAll(async () => {
    await system?.close();
    receiver?.server.close();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  const api = (method: string, path: string, json?: unknown) =>
    http(method, `${system.dispatcherUrl}${path}`, { json, headers: { 'X-API-Key': system.apiKey } });

  const createTask = async (overrides: Record<string, unknown> = {}) => {
    const taskId = randomUUID();
    const answer = await api('POST', '/tasks', {
      task_id: taskId,
      agent_image: SHELL_AGENT_IMAGE,
      runtime_target: { type: 'local', namespace: '' },
      resources: { cpu: '500m', memory: '64Mi' },
      env: { ECHO_MESSAGE: 'from-the-task' },
      ports: [{ container_port: 8080, protocol: 'tcp' }],
      brief_key: '',
      callback_url: `${receiver.url}/api/v1/tasks/${taskId}/callback/`,
      callback_token: `token-${taskId}`,
      timeout_seconds: 120,
      ...overrides,
    });
    expect(answer.status).toBe(201);
    return taskId;
  };

  const taskOf = async (taskId: string) => (await api('GET', `/tasks/${taskId}`)).body.data;
  const finalTask = (taskId: string) =>
    eventually(() => taskOf(taskId), (task) => ['completed', 'failed', 'timed_out', 'cancelled'].includes(task.status));
  const containersOf = async (taskId: string) =>
    docker.listContainers({ all: true, filters: { label: [`app.kubernetes.io/managed-by=${dispatcherName}`, `task-id=${taskId}`] } });

  it('runs the shell agent in a container to completed, with progress, result, callback and removal', async () => {
    const taskId = await createTask();
    const task = await finalTask(taskId);
    expect(task).toMatchObject({ status: 'completed', result_key: `results/${taskId}/result.json`, runtime: { backend: 'local' } });
    expect(task.progress.percentage).toBe(50);

    const storage = system.dispatcher!.get<ObjectStorage>(OBJECT_STORAGE);
    const result = await storage.get(task.result_key);
    const text = Buffer.concat(await (result as Readable).toArray()).toString();
    expect(JSON.parse(text)).toEqual({ task_id: taskId, agent: 'shell-echo', message: 'from-the-task' });

    const callback = await eventually(async () => receiver.received.find((c) => c.taskId === taskId), Boolean);
    expect(callback).toMatchObject({ authorization: `Bearer token-${taskId}`, body: { status: 'completed', result_key: task.result_key } });
    expect(await eventually(() => containersOf(taskId), (list) => list.length === 0)).toHaveLength(0);
  });

  it('shows the container output through the logs endpoint, whole and tailed', async () => {
    const taskId = await createTask();
    await finalTask(taskId);
    const logs = await api('GET', `/tasks/${taskId}/logs`);
    expect(logs.status).toBe(200);
    expect(logs.headers.get('content-type')).toContain('text/plain');
    expect(logs.text).toContain(`shell-echo agent for task ${taskId} checking in`);
    expect(logs.text).toContain(`PUT /agent/objects/results/${taskId}/result.json: HTTP/1.1 200`);
    const tail = await api('GET', `/tasks/${taskId}/logs?tail=1`);
    expect(tail.text).toBe('shell-echo agent done\n');
  });

  it('cancels a running container: it gets SIGTERM, is removed, and the callback says cancelled', async () => {
    const taskId = await createTask({ env: { SLEEP_SECONDS: '300' } });
    await eventually(() => taskOf(taskId), (task) => task.status === 'running');
    const [container] = await containersOf(taskId);
    expect(container.State).toBe('running');

    const cancel = await api('POST', `/tasks/${taskId}/cancel`);
    expect(cancel.status).toBe(200);
    expect((await finalTask(taskId)).status).toBe('cancelled');
    const callback = await eventually(async () => receiver.received.find((c) => c.taskId === taskId), Boolean);
    expect(callback?.body).toMatchObject({ status: 'failed', error_message: 'cancelled' });
    expect(await eventually(() => containersOf(taskId), (list) => list.length === 0)).toHaveLength(0);
    expect((await api('GET', `/tasks/${taskId}/logs`)).text).toContain('SIGTERM received');
  });

  it('fails a task whose image the engine cannot find, with the engine reason', async () => {
    const image = `localhost/agent-examples/missing-${randomBytes(3).toString('hex')}:latest`;
    const taskId = await createTask({ agent_image: image });
    const task = await finalTask(taskId);
    expect(task.status).toBe('failed');
    expect(task.error_message).toContain('ImagePullFailed');
    expect(task.error_message).toContain(image);
    const callback = await eventually(async () => receiver.received.find((c) => c.taskId === taskId), Boolean);
    expect(callback?.body).toMatchObject({ status: 'failed' });
  });

  it('times out a container that runs past timeout_seconds, stopping and removing it', async () => {
    const taskId = await createTask({ env: { SLEEP_SECONDS: '300' }, timeout_seconds: 2 });
    const task = await finalTask(taskId);
    expect(task.status).toBe('timed_out');
    const callback = await eventually(async () => receiver.received.find((c) => c.taskId === taskId), Boolean);
    expect(callback?.body).toMatchObject({ status: 'timed_out' });
    expect(await eventually(() => containersOf(taskId), (list) => list.length === 0)).toHaveLength(0);
  });

  it('adopts a running container after a dispatcher restart, then still cancels it', async () => {
    const taskId = await createTask({ env: { SLEEP_SECONDS: '300' } });
    await eventually(() => taskOf(taskId), (task) => task.status === 'running');
    const [before] = await containersOf(taskId);

    await system.restart();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await taskOf(taskId)).status).toBe('running');
    const [after] = await containersOf(taskId);
    expect(after).toMatchObject({ Id: before.Id, State: 'running' });

    expect((await api('POST', `/tasks/${taskId}/cancel`)).status).toBe(200);
    expect((await finalTask(taskId)).status).toBe('cancelled');
    expect(await eventually(() => containersOf(taskId), (list) => list.length === 0)).toHaveLength(0);
  });

  it('answers the dispatcher /ready with the engine up', async () => {
    const ready = await http('GET', `${system.dispatcherUrl}/ready`);
    expect(ready.status).toBe(200);
  });
});
