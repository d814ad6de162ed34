import { clientBearer, createTask, operator } from '../harness/controller-tasks';
import { EventReceiver } from '../harness/event-receiver';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { subscribe, subscriptionApi } from '../harness/subscriptions';
import { waitFor } from '../harness/wait';

jest.setTimeout(90_000);

/** /api/v1/subscriptions/: who may do what, what is shown once, the delivery log and its replays. */
describe('subscriptions API', () => {
  let system: TestSystem;
  let endpoint: EventReceiver;

  beforeAll(async () => {
    system = await startTestSystem({ env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32' } });
    endpoint = await new EventReceiver('127.0.0.2').start();
  });
  afterAll(async () => {
    await system?.close();
    await endpoint?.stop();
  });

  it('creates, reads, changes and deletes a subscription; the secret is in the creation answer only', async () => {
    const created = await subscribe(system, { url: endpoint.url, event_types: ['task.finished'], filter: { status: ['failed', 'timed_out'] }, description: 'endings' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: endpoint.url, event_types: ['task.finished'], enabled: true, filter: { status: ['failed', 'timed_out'] }, secret: expect.stringMatching(/^whsec_/) });
    const api = subscriptionApi(system);
    const read = await api.get(created.body.id);
    expect(read.body.secret).toBeUndefined();
    expect(read.text).not.toContain(created.body.secret.slice(6));
    expect((await api.list()).body.results.map((s: any) => s.id)).toContain(created.body.id);
    const changed = await api.update(created.body.id, { enabled: false, event_types: ['task.created', 'task.finished'] });
    expect(changed.body).toMatchObject({ enabled: false, disabled_reason: 'operator', event_types: ['task.created', 'task.finished'] });
    expect((await api.remove(created.body.id)).status).toBe(204);
    expect((await api.get(created.body.id)).status).toBe(404);
  });

  it('answers 400 naming the field for bad input', async () => {
    for (const [body, field] of [
      [{ url: endpoint.url, event_types: ['task.exploded'] }, 'event_types'],
      [{ url: endpoint.url, event_types: [] }, 'event_types'],
      [{ url: 'not a url', event_types: ['task.created'] }, 'url'],
      [{ event_types: ['task.created'] }, 'url'],
      [{ url: endpoint.url, event_types: ['task.created'], enabled: 'yes' }, 'enabled'],
      [{ url: endpoint.url, event_types: ['task.created'], filter: { status: 5 } }, 'filter.status'],
    ] as const) {
      const answer = await subscribe(system, body);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('invalid');
      expect(Object.keys(answer.body.errors)).toContain(field);
    }
    expect((await subscriptionApi(system).replaySince('00000000-0000-4000-8000-000000000000', 'yesterday')).status).toBe(400);
  });

  it('needs the subscriptions scopes and the scope that reads the events, and shows an OAuth client only its own subscriptions', async () => {
    const reader = await clientBearer(system, ['subscriptions:read']);
    expect((await subscribe(system, { url: endpoint.url, event_types: ['task.created'] }, reader)).status).toBe(403);
    expect((await http('GET', `${system.controllerUrl}/api/v1/subscriptions/`)).status).toBe(401);
    const blind = await clientBearer(system, ['subscriptions:read', 'subscriptions:write']);
    const refused = await subscribe(system, { url: endpoint.url, event_types: ['task.finished'] }, blind);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'permission_denied', detail: expect.stringContaining('tasks:read') });
    const alice = await clientBearer(system, ['subscriptions:read', 'subscriptions:write', 'tasks:read']);
    const bob = await clientBearer(system, ['subscriptions:read', 'subscriptions:write', 'tasks:read']);
    const mine = await subscribe(system, { url: endpoint.url, event_types: ['task.created'] }, alice);
    expect(mine.status).toBe(201);
    expect((await subscriptionApi(system, bob).get(mine.body.id)).status).toBe(404);
    expect((await subscriptionApi(system, bob).rotate(mine.body.id)).status).toBe(404);
    expect((await subscriptionApi(system, bob).list()).body.results).toEqual([]);
    expect((await subscriptionApi(system, alice).list()).body.results.map((s: any) => s.id)).toEqual([mine.body.id]);
    expect((await subscriptionApi(system, operator(system)).get(mine.body.id)).status).toBe(200);
    await subscriptionApi(system).remove(mine.body.id);
  });

  it('lists deliveries with their attempts, replays one with the same webhook-id, and replays everything since a time', async () => {
    const created = await subscribe(system, { url: endpoint.url, event_types: ['task.created'] });
    const api = subscriptionApi(system);
    const since = new Date().toISOString();
    const guid = (await createTask(system, { brief: { prompt: 'replay' } })).body.guid as string;
    const first = await waitFor(() => endpoint.ofType('task.created').find((d) => d.body.data.task_guid === guid), 20_000, 'the delivery');
    const page = await waitFor(async () => {
      const answer = await api.deliveries(created.body.id, '?status=delivered');
      return answer.body.results.length > 0 ? answer : null;
    }, 10_000, 'the delivered log');
    const [delivery] = page.body.results;
    expect(delivery).toMatchObject({ id: first.id, event_type: 'task.created', status: 'delivered', attempt_count: 1, payload: { type: 'task.created', data: { task_guid: guid } } });
    expect(delivery.attempts[0]).toMatchObject({ status_code: 200, response: 'ok', duration_ms: expect.any(Number) });

    expect((await api.replay(created.body.id, delivery.id)).status).toBe(202);
    await waitFor(() => endpoint.received.filter((d) => d.id === first.id).length === 2, 10_000, 'the replayed delivery');

    await api.update(created.body.id, { enabled: false });
    const missed = (await createTask(system, { brief: { prompt: 'while disabled' } })).body.guid as string;
    await api.update(created.body.id, { enabled: true });
    const replayed = await api.replaySince(created.body.id, since);
    expect(replayed.status).toBe(202);
    expect(replayed.body.replayed).toBe(2);
    await waitFor(() => endpoint.ofType('task.created').some((d) => d.body.data.task_guid === missed), 10_000, 'the missed event');
    expect(endpoint.received.filter((d) => d.id === first.id)).toHaveLength(3);
    expect((await api.replay(created.body.id, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});
