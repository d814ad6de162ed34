import { agentProcesses, killAgents } from '../harness/agent-processes';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { RoleProcess } from '../harness/role-process';
import { testEnv, TestSystem } from '../harness/system';

// The replicas run from dist/: `npm run build` first.
jest.setTimeout(90_000);

const LOST_SECONDS = 10;

interface Replica {
  process: RoleProcess;
  system: TestSystem;
}

/**
 * Two dispatcher processes on one database with the process engine. One is SIGKILLed: a
 * replica that never comes back has its running tasks failed by the other, naming it, with
 * their callbacks sent; a replica that starts again within the window keeps its tasks.
 */
describe('a dispatcher replica that goes silent', () => {
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let shared: Record<string, string | undefined>;
  const replicas: Replica[] = [];
  const taskIds: string[] = [];

  async function startReplica(instance: string): Promise<Replica> {
    const env = await testEnv({
      role: 'dispatcher',
      databaseUrl: shared.DATABASE_URL,
      env: { ...shared, DISPATCHER_INSTANCE: instance, DISPATCHER_REPLICA_HEARTBEAT_SECONDS: '1', DISPATCHER_REPLICA_LOST_SECONDS: String(LOST_SECONDS) },
    });
    const url = `http://127.0.0.1:${env.DISPATCHER_PORT}`;
    const replica = { process: await new RoleProcess(env, `${url}/health`).start(), system: { dispatcherUrl: url, apiKey: env.API_KEY } as TestSystem };
    replicas.push(replica);
    return replica;
  }

  /** A long sleep started on `replica` alone (its agent is a child of that process). */
  async function sleepingTask(replica: Replica): Promise<string> {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '300' }, timeout_seconds: 600 });
    request.callback_url = receiver.callbackUrl(request.task_id);
    taskIds.push(request.task_id);
    expect((await taskApi(replica.system).create(request)).status).toBe(201);
    await waitForStatus(replica.system, request.task_id, ['running'], 30_000);
    expect(agentProcesses(request.task_id)).toHaveLength(1);
    return request.task_id;
  }

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    const base = await testEnv({ role: 'dispatcher' });
    shared = { DATABASE_URL: base.DATABASE_URL, API_KEY: base.API_KEY, AGENT_KEY: base.AGENT_KEY, SECRET_KEY: base.SECRET_KEY, CALLBACK_SIGNING_KEY: base.CALLBACK_SIGNING_KEY };
  });
  afterAll(async () => {
    for (const replica of replicas) await replica.process.kill();
    killAgents(taskIds);
    await receiver?.close();
  });

  it('fails the running task of a replica killed for good, naming it, and sends its callback', async () => {
    const lost = await startReplica('replica-lost');
    const taskId = await sleepingTask(lost);
    const survivor = await startReplica('replica-survivor');
    await lost.process.kill();
    const killedAt = Date.now();

    const failed = await waitForStatus(survivor.system, taskId, ['failed'], (LOST_SECONDS + 30) * 1000);
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual((LOST_SECONDS - 2) * 1000);
    expect(failed.error_message).toContain('"replica-lost"');
    await waitFor(() => receiver.callbacks().find((c) => c.path.includes(taskId)), 20_000, 'the callback');
    const callbacks = receiver.callbacks().filter((c) => c.path.includes(taskId));
    expect(callbacks).toHaveLength(1);
    expect(callbacks[0].body).toMatchObject({ status: 'failed', error_message: expect.stringContaining('"replica-lost"') });
    expect((await taskApi(survivor.system).get(taskId)).body.data.callback).toMatchObject({ state: 'delivered' });
  });

  it('leaves the tasks of a replica that starts again within the window running', async () => {
    const restarting = await startReplica('replica-restarting');
    const taskId = await sleepingTask(restarting);
    const [pid] = agentProcesses(taskId);
    await restarting.process.kill();
    await restarting.process.start();
    // Past the window, counted from the kill: every survivor had several chances to take it for lost.
    await new Promise((resolve) => setTimeout(resolve, (LOST_SECONDS + 4) * 1000));
    const seen = (await taskApi(replicas[1].system).get(taskId)).body.data;
    expect(seen).toMatchObject({ status: 'running', error_message: null });
    expect(agentProcesses(taskId)).toEqual([pid]);
    expect(receiver.callbacks().filter((c) => c.path.includes(taskId))).toHaveLength(0);
    // Still its replica's to stop: a cancel ends the agent.
    expect((await taskApi(restarting.system).cancel(taskId)).status).toBe(200);
    await waitFor(() => agentProcesses(taskId).length === 0, 20_000, 'the agent to stop');
  });
});
