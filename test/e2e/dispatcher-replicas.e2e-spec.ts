import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { agentProcesses } from '../harness/agent-processes';
import { http } from '../harness/http';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem, testEnv } from '../harness/system';

// Agents and the second replica run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);

/**
 * A dispatcher replica as another host sees it: its own process, in its own PID namespace
 * (`unshare`), so the first replica's agents are not processes it can see or signal.
 */
async function replicaOnAnotherHost(env: Record<string, string | undefined>): Promise<{ child: ChildProcess; system: TestSystem }> {
  const settings = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, value]) => value !== undefined)) as Record<string, string>;
  const main = path.resolve(__dirname, '../../dist/src/main.js');
  const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, main], { env: settings, stdio: 'ignore', detached: true });
  const url = `http://127.0.0.1:${env.DISPATCHER_PORT}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`the second replica exited with ${child.exitCode}`);
    return (await http('GET', `${url}/health`).catch(() => null))?.status === 200;
  }, 30_000, 'the second replica to boot');
  return { child, system: { dispatcherUrl: url, apiKey: env.API_KEY } as TestSystem };
}

/**
 * Two dispatcher replicas on one database with the process engine: each agent is the
 * child of the replica that started it, and the other replica must neither take it for
 * gone nor lose a cancel it receives.
 */
describe('dispatcher replicas with host-local agents', () => {
  let first: TestSystem;
  let second: { child: ChildProcess; system: TestSystem } | undefined;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    first = await startTestSystem({ role: 'dispatcher', env: { DISPATCHER_INSTANCE: 'replica-a' } });
  });
  afterAll(async () => {
    const child = second?.child;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
    }
    await first?.close();
    await receiver?.close();
  });

  it("leaves the other replica's running agent alone, and a cancel sent to it still stops the agent", async () => {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '120' }, timeout_seconds: 300 });
    request.callback_url = receiver.callbackUrl(request.task_id);
    expect((await taskApi(first).create(request)).status).toBe(201);
    await waitForStatus(first, request.task_id, ['running'], 20_000);
    const [pid] = agentProcesses(request.task_id);
    expect(pid).toBeGreaterThan(0);

    // The second replica boots on the same database and secrets, and watches every live task.
    second = await replicaOnAnotherHost(await testEnv({
      role: 'dispatcher',
      databaseUrl: first.config.databaseUrl!,
      env: { DISPATCHER_INSTANCE: 'replica-b', API_KEY: first.apiKey, AGENT_KEY: first.agentKey },
    }));
    // Long enough for several watch rounds and stray sweeps of both replicas.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const seen = (await taskApi(second.system).get(request.task_id)).body.data;
    expect(seen.status).toBe('running');
    expect(agentProcesses(request.task_id)).toEqual([pid]);

    // A cancel arriving at the replica that does not hold the agent: the task is cancelled at
    // once and the owner stops the agent on its next sweep.
    expect((await taskApi(second.system).cancel(request.task_id)).status).toBe(200);
    expect((await taskApi(first).get(request.task_id)).body.data.status).toBe('cancelled');
    await waitFor(async () => agentProcesses(request.task_id).length === 0, 20_000, 'the owner to stop the agent');
    const logs = await taskApi(first).logs(request.task_id);
    expect(logs.text).toContain('SIGTERM received');
    await waitFor(async () => receiver.callbacks().some((c) => c.path.includes(request.task_id)), 10_000, 'the callback');
    const callback = receiver.callbacks().find((c) => c.path.includes(request.task_id))!;
    expect(callback.body).toMatchObject({ status: 'failed', error_message: 'cancelled' });
  });
});
