import { EventReceiver } from '../harness/event-receiver';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { testEnv } from '../harness/system';
import { waitFor } from '../harness/wait';

// The controller runs from dist/: `npm run build` first.
jest.setTimeout(120_000);

/**
 * A controller SIGKILLed after a task change and before its event was POSTed: the change,
 * its event and the delivery were stored together, so the restarted controller sends it.
 * No dispatcher is needed: the task's creation is the change.
 */
describe('a controller killed between a change and its delivery', () => {
  let controller: RoleProcess;
  let endpoint: EventReceiver;

  afterAll(async () => {
    await controller?.stop();
    await endpoint?.stop();
  });

  it('delivers the event after the restart, with the same webhook-id, verified with the same secret', async () => {
    endpoint = await new EventReceiver('127.0.0.2').start();
    endpoint.mode = 'hang';
    const env = await testEnv({ role: 'controller', env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32' } });
    const base = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
    const operator = { authorization: `Token ${env.API_TOKEN}` };
    controller = await new RoleProcess(env, `${base}/health/`).start();
    const subscription = await http('POST', `${base}/api/v1/subscriptions/`, { headers: operator, json: { url: endpoint.url, event_types: ['task.created'] } });
    expect(subscription.status).toBe(201);

    const task = await http('POST', `${base}/api/v1/tasks/`, {
      headers: operator,
      json: { agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 60, brief: { prompt: 'crash' } },
    });
    expect(task.status).toBe(201);
    // The POST is under way and unanswered: the controller dies now.
    const held = await waitFor(() => endpoint.received.find((d) => d.body.data.task_guid === task.body.guid), 20_000, 'the first attempt');
    await controller.kill();
    endpoint.mode = { status: 200 };

    controller = await new RoleProcess(env, `${base}/health/`).start();
    const delivered = await waitFor(() => endpoint.accepted.find((d) => d.body.data.task_guid === task.body.guid), 30_000, 'the delivery after the restart');
    expect(delivered.id).toBe(held.id);
    expect(endpoint.verify(delivered, subscription.body.secret)).toEqual(delivered.body);
    const log = await http('GET', `${base}/api/v1/subscriptions/${subscription.body.id}/deliveries/`, { headers: operator });
    expect(log.body.results[0]).toMatchObject({ id: held.id, status: 'delivered' });
  });
});
