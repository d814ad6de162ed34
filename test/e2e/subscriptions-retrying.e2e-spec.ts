import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTask, getTask, operator } from '../harness/controller-tasks';
import { EventReceiver } from '../harness/event-receiver';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { subscribe, subscriptionApi } from '../harness/subscriptions';
import { waitFor } from '../harness/wait';

jest.setTimeout(120_000);

const RETRY = { max_attempts: 3, backoff_seconds: 1, max_backoff_seconds: 60, on: ['infra'] };

/**
 * `task.retrying` as a subscriber receives it: the real controller and dispatcher, an agent
 * whose command does not exist (so every attempt fails to start), a receiver on 127.0.0.2
 * that checks each delivery with the standardwebhooks package.
 */
describe('outbound events of a task that is retried', () => {
  let system: TestSystem;
  let endpoint: EventReceiver;
  const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'missing-agent-'));

  beforeAll(async () => {
    system = await startTestSystem({
      env: {
        LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/flaky': path.join(agentDir, 'agent') }),
        TASK_DISPATCH_RETRY_SECONDS: '1',
        SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32',
        SUBSCRIPTION_RETRY_SCHEDULE: '1,1,1,1,1,1,1',
      },
    });
    endpoint = await new EventReceiver('127.0.0.2').start();
    await waitFor(async () => (await http('GET', `${system.controllerUrl}/api/v1/dispatchers/local/`, { headers: operator(system) })).body?.state === 'online',
      15_000, 'the dispatcher to register');
  });
  afterAll(async () => {
    await system?.close();
    await endpoint?.stop();
    fs.rmSync(agentDir, { recursive: true, force: true });
  });

  it('delivers each task.retrying, signed, with attempt, backoff, reason, event id and updated_at, then the dead-lettered task.finished', async () => {
    const subscription = await subscribe(system, { url: endpoint.url, event_types: ['task.retrying', 'task.finished'] });
    expect(subscription.status).toBe(201);
    expect(subscription.body.event_types).toEqual(['task.retrying', 'task.finished']);

    const created = await createTask(system, { agent_image: 'test/flaky', timeout_seconds: 60, retry: RETRY });
    expect(created.status).toBe(201);
    const guid = created.body.guid as string;
    const mine = (type: string) => endpoint.ofType(type).filter((delivery) => delivery.body.data.task_guid === guid);

    const [finished] = await waitFor(() => (mine('task.finished').length ? mine('task.finished') : null), 60_000, 'task.finished');
    const task = await getTask(system, guid);
    expect(task.body).toMatchObject({ status: 'failed', attempt: 3, dead_letter: true, next_attempt_at: null });

    const retrying = mine('task.retrying');
    expect(retrying).toHaveLength(2);
    for (const delivery of [...retrying, finished]) {
      // What the receiver verified is exactly what was sent, and the envelope names the event.
      expect(endpoint.verify(delivery, subscription.body.secret)).toEqual(delivery.body);
      expect(delivery.body.data).toMatchObject({ id: expect.any(Number), kind: delivery.body.type, task_guid: guid });
      expect(Date.parse(delivery.body.timestamp)).not.toBeNaN();
      expect(Date.parse(delivery.body.data.updated_at)).not.toBeNaN();
    }
    expect(retrying.map((delivery) => [delivery.body.data.attempt, delivery.body.data.reason, delivery.body.data.status]))
      .toEqual([[2, 'infra', 'pending'], [3, 'infra', 'pending']]);
    // The task was made pending at `updated_at`; the next attempt waits below the backoff ceiling (1 s, then 2 s).
    const waits = retrying.map((delivery) => (Date.parse(delivery.body.data.next_attempt_at) - Date.parse(delivery.body.data.updated_at)) / 1000);
    expect(waits[0]).toBeGreaterThanOrEqual(0);
    expect(waits[0]).toBeLessThanOrEqual(1.001);
    expect(waits[1]).toBeGreaterThanOrEqual(0);
    expect(waits[1]).toBeLessThanOrEqual(2.001);
    // Each attempt started no earlier than its backoff allowed.
    const attempts = task.body.attempts;
    expect(Date.parse(attempts[1].started_at)).toBeGreaterThanOrEqual(Date.parse(retrying[0].body.data.next_attempt_at) - 5);
    expect(Date.parse(attempts[2].started_at)).toBeGreaterThanOrEqual(Date.parse(retrying[1].body.data.next_attempt_at) - 5);

    expect(finished.body.data).toMatchObject({ status: 'failed', agent_image: 'test/flaky' });
    expect(finished.body.data.error_message).toMatch(/could not be started/);
    const ids = [...retrying, finished].map((delivery) => delivery.body.data.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(3);
    expect(Date.parse(finished.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(retrying[1].body.data.updated_at));

    // One delivery per event, each once, each logged as delivered.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(mine('task.retrying')).toHaveLength(2);
    expect(mine('task.finished')).toHaveLength(1);
    expect(new Set([...retrying, finished].map((delivery) => delivery.id)).size).toBe(3);
    const log = await subscriptionApi(system).deliveries(subscription.body.id);
    const logged = log.body.results.filter((delivery: any) => delivery.payload.data.task_guid === guid);
    expect(logged.map((delivery: any) => [delivery.event_type, delivery.status]).sort())
      .toEqual([['task.finished', 'delivered'], ['task.retrying', 'delivered'], ['task.retrying', 'delivered']]);
  });
});
