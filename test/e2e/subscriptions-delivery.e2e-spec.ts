import { DataSource } from 'typeorm';
import { checkInDispatcher, createTask } from '../harness/controller-tasks';
import { scrape } from '../harness/metrics';
import { EventReceiver } from '../harness/event-receiver';
import { startTestSystem, TestSystem } from '../harness/system';
import { subscribe, subscriptionApi } from '../harness/subscriptions';
import { waitFor } from '../harness/wait';

jest.setTimeout(120_000);

const TASK_TYPES = ['task.created', 'task.status', 'task.progress', 'task.finished'];

/**
 * Outbound events end to end: the real controller and dispatcher, receivers on loopback
 * (127.0.0.2, the only block SUBSCRIPTION_ALLOWED_CIDRS opens), every delivery checked with
 * the standardwebhooks package as a subscriber would.
 */
describe('outbound event delivery', () => {
  let system: TestSystem;
  const receivers: EventReceiver[] = [];
  const receiver = async (host = '127.0.0.2') => {
    const started = await new EventReceiver(host).start();
    receivers.push(started);
    return started;
  };
  const api = () => subscriptionApi(system);
  const newTask = async (prompt: string) => (await createTask(system, { brief: { prompt } })).body.guid as string;

  beforeAll(async () => {
    system = await startTestSystem({ env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32', SUBSCRIPTION_RETRY_SCHEDULE: '1,1,1,1,1,1,1' } });
  });
  afterAll(async () => {
    await system?.close();
    for (const started of receivers) await started.stop();
  });

  it('delivers each event type, signed so that standardwebhooks verifies it, and disables an endpoint that answers 410', async () => {
    const endpoint = await receiver();
    const all = await subscribe(system, { url: endpoint.url, event_types: [...TASK_TYPES, 'dispatcher.state', 'subscription.disabled'] });
    expect(all.status).toBe(201);
    expect(all.body.secret).toMatch(/^whsec_/);

    const guid = await newTask('every type');
    await waitFor(() => endpoint.ofType('task.finished').some((d) => d.body.data.task_guid === guid), 40_000, 'task.finished');
    await checkInDispatcher(system, { name: 'outbound-probe', endpoint_url: 'http://127.0.0.1:9', heartbeat_interval_seconds: 1 });
    await waitFor(() => endpoint.ofType('dispatcher.state').some((d) => d.body.data.dispatcher_slug === 'outbound-probe'), 20_000, 'dispatcher.state');

    const gone = await receiver();
    gone.mode = { status: 410 };
    const leaving = await subscribe(system, { url: gone.url, event_types: ['task.created'] });
    await newTask('gone');
    await waitFor(() => endpoint.ofType('subscription.disabled').some((d) => d.body.data.subscription_id === leaving.body.id), 20_000, 'subscription.disabled');
    expect((await api().get(leaving.body.id)).body).toMatchObject({ enabled: false, disabled_reason: 'gone' });
    await newTask('after gone');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(gone.received).toHaveLength(1);

    const types = new Set(endpoint.accepted.map((d) => d.body.type));
    expect([...types].sort()).toEqual([...TASK_TYPES, 'dispatcher.state', 'subscription.disabled'].sort());
    for (const delivery of endpoint.accepted) {
      expect(endpoint.verify(delivery, all.body.secret)).toEqual(delivery.body);
      expect(delivery.body.data).toMatchObject({ id: expect.any(Number), kind: delivery.body.type });
      if (delivery.body.type.startsWith('task.')) expect(Date.parse(delivery.body.data.updated_at)).not.toBeNaN();
    }
    const mine = endpoint.accepted.filter((d) => d.body.data.task_guid === guid).map((d) => d.body.data.status);
    expect(mine).toEqual(expect.arrayContaining(['pending', 'dispatched', 'running', 'completed']));
    expect(new Set(endpoint.accepted.map((d) => d.id)).size).toBe(endpoint.accepted.length);
  });

  it('gives a receiver that was down every event once it is back, none twice, each attempt in the log', async () => {
    const endpoint = await receiver();
    const created = await subscribe(system, { url: endpoint.url, event_types: ['task.created'] });
    await endpoint.stop();
    const guids: string[] = [];
    for (let i = 0; i < 5; i++) guids.push(await newTask(`down ${i}`));
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await endpoint.start();
    await waitFor(() => guids.every((guid) => endpoint.ofType('task.created').some((d) => d.body.data.task_guid === guid)), 20_000, 'every event after the return');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const ids = endpoint.accepted.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    const log = await api().deliveries(created.body.id);
    const delivered = log.body.results.filter((d: any) => guids.includes(d.payload.data.task_guid));
    expect(delivered).toHaveLength(5);
    for (const delivery of delivered) {
      expect(delivery.status).toBe('delivered');
      expect(delivery.attempts.length).toBeGreaterThan(1);
      expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/ECONNREFUSED/) });
      expect(delivery.attempts.at(-1)).toMatchObject({ status_code: 200, response: 'ok', error: null });
    }
  });

  it('does not let a receiver that hangs delay another subscription', async () => {
    const hanging = await receiver();
    hanging.mode = 'hang';
    const fast = await receiver();
    await subscribe(system, { url: hanging.url, event_types: ['task.created'] });
    await subscribe(system, { url: fast.url, event_types: ['task.created'] });
    const createdAt = new Map<string, number>();
    for (let i = 0; i < 12; i++) {
      const guid = await newTask(`hang ${i}`);
      createdAt.set(guid, Date.now());
    }
    const guids = [...createdAt.keys()];
    await waitFor(() => guids.every((guid) => fast.ofType('task.created').some((d) => d.body.data.task_guid === guid)), 10_000, 'the fast receiver');
    // Each event reaches the fast receiver within a second or two of its task's creation, whatever the other endpoint does.
    const lags = fast.accepted.filter((d) => guids.includes(d.body.data.task_guid)).map((d) => d.at - createdAt.get(d.body.data.task_guid)!);
    expect(Math.max(...lags)).toBeLessThan(2500);
    expect(hanging.received.length).toBeLessThanOrEqual(system.config.subscriptions.concurrencyPerEndpoint);
    expect(hanging.received.every((d) => d.answered === null)).toBe(true);
  });

  it('signs with both secrets during a rotation, and each verifies', async () => {
    const endpoint = await receiver();
    const created = await subscribe(system, { url: endpoint.url, event_types: ['task.created'] });
    const rotated = await api().rotate(created.body.id);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const guid = await newTask('rotation');
    const delivery = await waitFor(() => endpoint.ofType('task.created').find((d) => d.body.data.task_guid === guid), 20_000, 'the delivery');
    expect(delivery.signature.split(' ')).toHaveLength(2);
    expect(endpoint.verify(delivery, created.body.secret)).toEqual(delivery.body);
    expect(endpoint.verify(delivery, rotated.body.secret)).toEqual(delivery.body);
  });

  it('disables an endpoint that has failed for 5 days, and says so with an event', async () => {
    const watcher = await receiver();
    await subscribe(system, { url: watcher.url, event_types: ['subscription.disabled'] });
    const dead = await receiver();
    dead.mode = { status: 503 };
    const failing = await subscribe(system, { url: dead.url, event_types: ['task.created'] });
    await system.controller!.get(DataSource).query(`UPDATE "controller"."subscriptions" SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [failing.body.id]);
    await newTask('five days');
    const event = await waitFor(() => watcher.ofType('subscription.disabled').find((d) => d.body.data.subscription_id === failing.body.id), 20_000, 'subscription.disabled');
    expect(event.body.data).toMatchObject({ reason: 'failing', status: 'disabled' });
    expect((await api().get(failing.body.id)).body).toMatchObject({ enabled: false, disabled_reason: 'failing' });

    const metrics = await scrape(system.controllerUrl);
    expect(metrics.value('controller_subscriptions_disabled')).toBeGreaterThanOrEqual(2);
    expect(metrics.value('controller_subscription_attempts_total{outcome="delivered"}')).toBeGreaterThan(10);
    expect(metrics.value('controller_subscription_attempts_total{outcome="failed"}')).toBeGreaterThan(5);
    expect(metrics.value(`controller_subscription_pending_deliveries{subscription="${failing.body.id}"}`)).toBeGreaterThanOrEqual(0);
    expect(metrics.value(`controller_subscription_oldest_undelivered_age_seconds{subscription="${failing.body.id}"}`)).toBeDefined();
  });

  it('refuses private, link-local and loopback targets, including a name that resolves to 127.0.0.1', async () => {
    for (const url of ['http://127.0.0.1:8000/', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/', 'http://100.64.0.1/', 'http://[::1]/', 'http://[fd00::1]/', 'ftp://example.com/']) {
      const refused = await subscribe(system, { url, event_types: ['task.created'] });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'invalid', errors: { url: [expect.any(String)] } });
    }
    const loopback = await receiver('127.0.0.1');
    const named = await subscribe(system, { url: loopback.url.replace('127.0.0.1', 'localhost'), event_types: ['task.created'] });
    expect(named.status).toBe(201);
    await newTask('rebinding');
    const log = await waitFor(async () => {
      const page = await api().deliveries(named.body.id);
      return page.body.results[0]?.attempts.length > 0 ? page.body.results[0] : null;
    }, 20_000, 'a refused attempt');
    expect(log.attempts[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/refused: localhost resolves to .*127\.0\.0\.1 is a loopback address/) });
    expect(loopback.received).toHaveLength(0);
  });
});
