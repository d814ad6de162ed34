import { createTask } from '../harness/controller-tasks';
import { EventReceiver } from '../harness/event-receiver';
import { RoleProcess } from '../harness/role-process';
import { subscribe, subscriptionApi } from '../harness/subscriptions';
import { startControllerReplica, startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(120_000);

/**
 * Outbound events across two controller replicas on one database. A replica with no
 * subscription enabled skips its delivery claims, and learns of a subscription made on the
 * other replica by reading again within a second: an event written on either replica reaches
 * a subscription made on the other, once.
 */
describe('outbound events across controller replicas', () => {
  let a: TestSystem;
  let b: RoleProcess;
  let bSystem: TestSystem;
  const receivers: EventReceiver[] = [];

  beforeAll(async () => {
    a = await startTestSystem({ role: 'controller', env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32' } });
    ({ process: b, view: bSystem } = await startControllerReplica(a, { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32' }));
  });
  afterAll(async () => {
    await b?.stop();
    await a?.close();
    for (const started of receivers) await started.stop();
  });

  const receiver = async () => {
    const started = await new EventReceiver('127.0.0.2').start();
    receivers.push(started);
    return started;
  };

  it('delivers what either replica writes to a subscription made on the other, each event once', async () => {
    // Both replicas have run rounds with no subscription enabled.
    await createTask(a, { brief: { prompt: 'before any subscription, on a' } });
    await createTask(bSystem, { brief: { prompt: 'before any subscription, on b' } });

    const onB = await receiver();
    const madeOnB = await subscribe(bSystem, { url: onB.url, event_types: ['task.created'] });
    expect(madeOnB.status).toBe(201);
    const fromA = (await createTask(a, { brief: { prompt: 'written on a' } })).body.guid as string;
    await waitFor(() => onB.ofType('task.created').some((d) => d.body.data.task_guid === fromA), 20_000, 'task.created written on a');

    const onA = await receiver();
    const madeOnA = await subscribe(a, { url: onA.url, event_types: ['task.created'] });
    expect(madeOnA.status).toBe(201);
    const fromB = (await createTask(bSystem, { brief: { prompt: 'written on b' } })).body.guid as string;
    await waitFor(() => onA.ofType('task.created').some((d) => d.body.data.task_guid === fromB), 20_000, 'task.created written on b');
    await waitFor(() => onB.ofType('task.created').some((d) => d.body.data.task_guid === fromB), 20_000, 'task.created written on b, first subscription');

    // Switched off on one replica: the other stops delivering to it too, within its next read.
    expect((await subscriptionApi(a).update(madeOnB.body.id, { enabled: false })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const afterOff = (await createTask(bSystem, { brief: { prompt: 'after the switch-off' } })).body.guid as string;
    await waitFor(() => onA.ofType('task.created').some((d) => d.body.data.task_guid === afterOff), 20_000, 'task.created after the switch-off');
    expect(onB.ofType('task.created').some((d) => d.body.data.task_guid === afterOff)).toBe(false);

    for (const endpoint of [onA, onB]) expect(new Set(endpoint.accepted.map((d) => d.id)).size).toBe(endpoint.accepted.length);
  });

  it('delivers from a replica that last read no subscription, once the one that made it is gone', async () => {
    // Every subscription off: both replicas read "none enabled" on their next rounds.
    const api = subscriptionApi(a);
    for (const { id } of (await api.list()).body.results as { id: string }[]) expect((await api.update(id, { enabled: false })).status).toBe(200);
    await createTask(a, { brief: { prompt: 'with every subscription off' } });
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const endpoint = await receiver();
    expect((await subscribe(bSystem, { url: endpoint.url, event_types: ['task.created'] })).status).toBe(201);
    await b.stop();
    const guid = (await createTask(a, { brief: { prompt: 'b is gone' } })).body.guid as string;
    await waitFor(() => endpoint.ofType('task.created').some((d) => d.body.data.task_guid === guid), 20_000, 'task.created delivered by a');
  });
});
