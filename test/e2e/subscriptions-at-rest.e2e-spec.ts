import { createTask, getTask } from '../harness/controller-tasks';
import { EventReceiver } from '../harness/event-receiver';
import { sentStatements } from '../harness/pg-statements';
import { subscribe, subscriptionApi } from '../harness/subscriptions';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(90_000);

/** The subscription outbox's claim (`SubscriptionOutbox.claim`). */
const CLAIM = /^WITH picked AS \(/;

/**
 * The subscription delivery waits for what it has to do: woken by the events written, by an
 * attempt ending, and by a timer set for the next delivery's due time as its claim read it,
 * not by a claim twice a second.
 */
describe('subscription delivery at rest and on retry', () => {
  let system: TestSystem;
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await new EventReceiver('127.0.0.2').start();
    system = await startTestSystem({ env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32', SUBSCRIPTION_RETRY_SCHEDULE: '2,2' } });
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.stop();
  });

  it('sends no claim while an enabled subscription has nothing due, and retries a failed delivery when its backoff ends', async () => {
    const created = await subscribe(system, { url: receiver.url, event_types: ['task.created'] });
    expect(created.status).toBe(201);
    const first = (await createTask(system, { brief: { prompt: 'delivered at once' } })).body.guid as string;
    await waitFor(() => receiver.ofType('task.created').some((delivery) => delivery.body.data.task_guid === first), 15_000, 'the first delivery');
    // Every event of its life written (each wakes a round), and a moment for the last round.
    await waitFor(async () => ['completed', 'failed'].includes((await getTask(system, first)).body.status), 30_000, 'the task to end');
    await new Promise((resolve) => setTimeout(resolve, 1500));

    // Nothing due: at most the one round the last wake-up set (a claim every 5 s), where the
    // build before sent one every 500 ms.
    const sent = sentStatements();
    await new Promise((resolve) => setTimeout(resolve, 4000));
    sent.stop();
    expect(sent.texts.filter((text) => CLAIM.test(text.trim())).length).toBeLessThanOrEqual(1);

    // A delivery answered 503 is retried when its 2 s backoff ends, with no event to wake it.
    receiver.mode = { status: 503 };
    const second = (await createTask(system, { brief: { prompt: 'retried' } })).body.guid as string;
    await waitFor(() => receiver.received.some((delivery) => delivery.body.data?.task_guid === second), 15_000, 'the first attempt');
    receiver.mode = { status: 200 };
    const failedAt = Date.now();
    await waitFor(() => receiver.ofType('task.created').some((delivery) => delivery.body.data.task_guid === second), 15_000, 'the retry');
    const waited = Date.now() - failedAt;
    expect(waited).toBeGreaterThanOrEqual(1500);
    // Its due time, not the 5 s wait of a controller with nothing due.
    expect(waited).toBeLessThan(4500);
    const log = await subscriptionApi(system).deliveries(created.body.id);
    const retried = log.body.results.find((delivery: { payload: { data: { task_guid: string } } }) => delivery.payload.data.task_guid === second);
    expect(retried).toMatchObject({ status: 'delivered' });
    expect(retried.attempts.map((attempt: { status_code: number }) => attempt.status_code)).toEqual([503, 200]);
  });
});
