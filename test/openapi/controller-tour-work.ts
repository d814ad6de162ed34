import { createHmac, randomUUID } from 'node:crypto';
import { pushPayload, signedWebhook } from '../harness/webhooks';
import { randomPackage } from '../harness/skills';
import { asIs, ControllerClient } from './clients';
import { subscriptionsTour } from './controller-tour-subscriptions';
import { expectStatus } from './tour';

export interface WorkTourContext {
  operator: Record<string, string>;
  /** A client holding `tasks:read` only. */
  reader: Record<string, string>;
  signingKey: string;
  forgeSecret: string;
  /** The callback token the (recording) dispatcher was given for a task. */
  callbackTokenOf(guid: string): Promise<string>;
}

const template = { agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '500m', memory: '256Mi' }, timeout_seconds: 600 };

/** Every task, callback, skill, workflow, webhook and delivery operation: each success and the refusals the contract names. */
export async function workTour(client: ControllerClient, context: WorkTourContext): Promise<void> {
  const { operator, reader } = context;
  const created = await client.POST('/api/v1/tasks', { headers: operator, body: { ...template, brief: { prompt: 'tour' } } });
  expectStatus(created, 201);
  const guid = created.data!.guid;
  const task = { params: { path: { guid } }, headers: operator };
  expectStatus(await client.POST('/api/v1/tasks', { headers: operator, body: { agent_image: 'x' } as never }), 400);
  expectStatus(await client.POST('/api/v1/tasks', { headers: reader, body: { ...template, brief: {} } }), 403);
  expectStatus(await client.GET('/api/v1/tasks', { headers: reader, params: { query: { limit: 5 } } }), 200);
  expectStatus(await client.GET('/api/v1/tasks', { headers: operator, params: { query: { limit: 0 } } }), 400);
  expectStatus(await client.GET('/api/v1/tasks/{guid}', task), 200);
  expectStatus(await client.GET('/api/v1/tasks/{guid}', { ...task, params: { path: { guid: randomUUID() } } }), 404);

  await callbackTour(client, context, guid);
  expectStatus(await client.GET('/api/v1/tasks/{guid}/brief', task), 200);
  expectStatus(await client.GET('/api/v1/tasks/{guid}/brief', { ...task, params: { path: { guid: randomUUID() } } }), 404);
  expectStatus(await client.GET('/api/v1/tasks/{guid}/logs', { ...task, params: { path: { guid }, query: { tail: 10 } }, parseAs: 'text' }), 200);
  expectStatus(await client.GET('/api/v1/tasks/{guid}/logs', { ...task, params: { path: { guid: randomUUID() } }, parseAs: 'text' }), 404);
  await eventsTour(client, reader, guid);
  await subscriptionsTour(client, operator, reader);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/cancel', task), 409);
  const other = await client.POST('/api/v1/tasks', { headers: operator, body: { ...template, brief: { prompt: 'cancel me' }, retry: { max_attempts: 2, on: ['infra', 'failed'] } } });
  await context.callbackTokenOf(other.data!.guid);
  await retriesTour(client, context, guid, other.data!.guid);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/cancel', { params: { path: { guid: other.data!.guid } }, headers: operator }), 200);

  await skillsTour(client, operator);
  await workflowsAndWebhooksTour(client, context);
}

/** Dead letters and re-runs: `done` is final, `open` is not. */
async function retriesTour(client: ControllerClient, context: WorkTourContext, done: string, open: string): Promise<void> {
  const { operator, reader } = context;
  expectStatus(await client.GET('/api/v1/tasks', { headers: reader, params: { query: { dead_letter: true, limit: 5 } } }), 200);
  expectStatus(await client.GET('/api/v1/tasks', { headers: reader, params: { query: { dead_letter: 'maybe' as never } } }), 400);
  expectStatus(await client.POST('/api/v1/tasks', { headers: operator, body: { ...template, brief: {}, retry: { max_attempts: 21 } } }), 400);
  const rerun = { params: { path: { guid: done } }, headers: operator };
  expectStatus(await client.POST('/api/v1/tasks/{guid}/rerun', rerun), 201);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/rerun', { ...rerun, headers: reader }), 403);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/rerun', { ...rerun, params: { path: { guid: open } } }), 409);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/rerun', { ...rerun, params: { path: { guid: randomUUID() } } }), 404);
}

/** The event stream answers at once with its headers; the spec reads no further than that. */
async function eventsTour(client: ControllerClient, reader: Record<string, string>, guid: string): Promise<void> {
  const stream = await client.GET('/api/v1/events', { headers: reader, params: { query: { task_guid: guid, last_event_id: 0 } }, parseAs: 'stream' });
  expectStatus(stream, 200);
  await stream.response.body?.cancel();
  expectStatus(await client.GET('/api/v1/events', { headers: reader, params: { query: { task_guid: 'not-a-uuid' } }, parseAs: 'text' }), 400);
}

async function callbackTour(client: ControllerClient, context: WorkTourContext, guid: string): Promise<void> {
  const token = await context.callbackTokenOf(guid);
  const send = (kind: 'callback' | 'progress', body: object, bearer = token, key = context.signingKey) => {
    const signature = `sha256=${createHmac('sha256', key).update(JSON.stringify(body)).digest('hex')}`;
    const options = { params: { path: { guid } }, headers: { authorization: `Bearer ${bearer}`, 'x-service-signature': signature }, body };
    return kind === 'callback' ? client.POST('/api/v1/tasks/{guid}/callback', options as never) : client.POST('/api/v1/tasks/{guid}/progress', options as never);
  };
  expectStatus(await send('progress', { percentage: 50, message: 'half way', data: {} }), 200);
  expectStatus(await send('progress', { percentage: 500 }), 400);
  expectStatus(await send('callback', { status: 'completed', exit_code: 0, result_key: null, result_metadata: {}, error_message: null }), 200);
  expectStatus(await send('callback', { status: 'completed', exit_code: 0 }), 200);
  expectStatus(await send('callback', { status: 'failed', exit_code: 1 }), 409);
  expectStatus(await send('progress', { percentage: 60 }), 409);
  expectStatus(await send('callback', { status: 'completed' }, 'not-the-token'), 401);
  expectStatus(await send('callback', { status: 'completed' }, token, 'not-the-key'), 403);
  expectStatus(await client.POST('/api/v1/tasks/{guid}/callback', { params: { path: { guid: randomUUID() } }, body: { status: 'completed' } }), 404);
}

async function skillsTour(client: ControllerClient, operator: Record<string, string>): Promise<void> {
  const name = `Tour ${randomUUID().slice(0, 8)}`;
  const created = await client.POST('/api/v1/skills', { headers: operator, body: { name, category: 'tool' } });
  expectStatus(created, 201);
  expectStatus(await client.POST('/api/v1/skills', { headers: operator, body: { name, category: 'tool' } }), 409);
  const slug = { params: { path: { slug: created.data!.slug } }, headers: operator };
  expectStatus(await client.GET('/api/v1/skills', { headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/skills/{slug}', slug), 200);
  expectStatus(await client.GET('/api/v1/skills/{slug}', { ...slug, params: { path: { slug: 'nothing-here' } } }), 404);
  const bytes = randomPackage(512);
  const upload = () => {
    const body = new FormData();
    body.append('file', new Blob([bytes], { type: 'application/zip' }), 'package.zip');
    return client.POST('/api/v1/skills/{slug}/upload', { ...slug, body: body as never, bodySerializer: asIs });
  };
  expectStatus(await upload(), 201);
  expectStatus(await upload(), 200);
  const download = await client.GET('/api/v1/skills/{slug}/download', { ...slug, parseAs: 'arrayBuffer' });
  expectStatus(download, 200);
  const etag = download.response.headers.get('etag')!;
  expectStatus(await client.GET('/api/v1/skills/{slug}/download', { ...slug, headers: { ...operator, 'if-none-match': etag }, parseAs: 'text' }), 304);
  expectStatus(await client.GET('/api/v1/skills/{slug}/download', { ...slug, params: { path: { slug: 'nothing-here' } } }), 404);
}

async function workflowsAndWebhooksTour(client: ControllerClient, context: WorkTourContext): Promise<void> {
  const { operator } = context;
  const id = `tour-${randomUUID().slice(0, 8)}`;
  const body = { id, name: 'Tour', priority: 1, triggers: [{ source: 'forge' as const, event: 'push', filter: { 'repository.full_name': 'acme/tour' } }], task_template: { ...template, brief: { ref: '{{payload.ref}}' } }, retry: { max_attempts: 5, backoff_seconds: 30, on: ['infra' as const, 'timed_out' as const] } };
  expectStatus(await client.POST('/api/v1/workflows', { headers: operator, body }), 201);
  expectStatus(await client.POST('/api/v1/workflows', { headers: operator, body }), 409);
  const workflow = { params: { path: { id } }, headers: operator };
  expectStatus(await client.GET('/api/v1/workflows', { headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/workflows/{id}', workflow), 200);
  expectStatus(await client.GET('/api/v1/workflows/{id}', { ...workflow, params: { path: { id: 'nothing-here' } } }), 404);
  const { id: _id, ...replacement } = body;
  expectStatus(await client.PUT('/api/v1/workflows/{id}', { ...workflow, body: replacement }), 200);

  const deliver = async (payload: Record<string, unknown>, secret = context.forgeSecret) => {
    const { headers } = await signedWebhook('forge', payload, { secret });
    return client.POST('/api/v1/webhooks', { body: payload, headers });
  };
  const routed = await deliver(pushPayload('acme/tour') as Record<string, unknown>);
  expectStatus(routed, 200);
  expectStatus(await deliver(pushPayload('acme/elsewhere') as Record<string, unknown>), 202);
  expectStatus(await deliver(pushPayload('acme/tour') as Record<string, unknown>, 'not-the-secret'), 401);
  expectStatus(await client.POST('/api/v1/webhooks', { body: {}, headers: { 'x-webhook-source': 'nowhere' } }), 400);
  expectStatus(await client.GET('/api/v1/workflows/{id}/runs', workflow), 200);

  const deliveries = await client.GET('/api/v1/webhooks/deliveries', { headers: operator });
  expectStatus(deliveries, 200);
  const first = deliveries.data!.results.find((delivery) => delivery.routed_to === id)!;
  const delivery = { params: { path: { id: first.id } }, headers: operator };
  expectStatus(await client.GET('/api/v1/webhooks/deliveries/{id}', delivery), 200);
  expectStatus(await client.GET('/api/v1/webhooks/deliveries/{id}', { ...delivery, params: { path: { id: randomUUID() } } }), 404);
  expectStatus(await client.POST('/api/v1/webhooks/deliveries/{id}/replay', delivery), 200);
  expectStatus(await client.POST('/api/v1/webhooks/deliveries/{id}/replay', { ...delivery, headers: context.reader }), 403);

  expectStatus(await client.DELETE('/api/v1/workflows/{id}', workflow), 204);
  expectStatus(await client.DELETE('/api/v1/workflows/{id}', workflow), 404);
  expectStatus(await client.GET('/api/v1/workflows/{id}/runs', workflow), 404);
  await scheduledWorkflowTour(client, context);
}

async function scheduledWorkflowTour(client: ControllerClient, context: WorkTourContext): Promise<void> {
  const { operator } = context;
  const id = `tour-nightly-${randomUUID().slice(0, 8)}`;
  const trigger = { source: 'schedule' as const, cron: '0 3 * * *', timezone: 'Europe/Berlin', catch_up: 'none' as const };
  const body = { id, triggers: [trigger], task_template: { ...template, brief: { night_of: '{{schedule.time}}' } } };
  expectStatus(await client.POST('/api/v1/workflows', { headers: operator, body: { ...body, triggers: [{ ...trigger, cron: '0 3 * *' }] } }), 400);
  expectStatus(await client.POST('/api/v1/workflows', { headers: operator, body }), 201);
  const workflow = { params: { path: { id } }, headers: operator };
  const shown = await client.GET('/api/v1/workflows/{id}', workflow);
  expectStatus(shown, 200);
  if (shown.data?.next_runs?.length !== 5) throw new Error(`${id}: expected 5 next_runs, got ${JSON.stringify(shown.data?.next_runs)}`);
  expectStatus(await client.DELETE('/api/v1/workflows/{id}', workflow), 204);
}
