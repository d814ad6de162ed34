import { randomUUID } from 'node:crypto';
import { ControllerClient } from './clients';
import { expectStatus } from './tour';

/**
 * Every subscription operation and its refusals. The subscription stays disabled, so no
 * attempt runs while the tour replays (the replay of everything since a time makes the
 * delivery from the event log).
 */
export async function subscriptionsTour(client: ControllerClient, operator: Record<string, string>, reader: Record<string, string>): Promise<void> {
  const since = new Date(Date.now() - 3600_000).toISOString();
  const body = { url: 'https://orchestrator.example.com/hooks', event_types: ['task.created' as const], enabled: false };
  const created = await client.POST('/api/v1/subscriptions', { headers: operator, body });
  expectStatus(created, 201);
  const id = created.data!.id;
  const one = { params: { path: { id } }, headers: operator };
  const missing = { params: { path: { id: randomUUID() } }, headers: operator };
  expectStatus(await client.POST('/api/v1/subscriptions', { headers: operator, body: { ...body, url: 'http://169.254.169.254/' } }), 400);
  expectStatus(await client.POST('/api/v1/subscriptions', { headers: reader, body }), 403);
  expectStatus(await client.GET('/api/v1/subscriptions', { headers: operator, params: { query: { limit: 5 } } }), 200);
  expectStatus(await client.GET('/api/v1/subscriptions/{id}', one), 200);
  expectStatus(await client.GET('/api/v1/subscriptions/{id}', missing), 404);
  expectStatus(await client.PATCH('/api/v1/subscriptions/{id}', { ...one, body: { description: 'tour' } }), 200);
  expectStatus(await client.PATCH('/api/v1/subscriptions/{id}', { ...missing, body: { description: 'tour' } }), 404);
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/rotate-secret', one), 200);
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/rotate-secret', missing), 404);
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/replay', { ...one, body: { since } }), 202);
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/replay', { ...missing, body: { since } }), 404);
  const deliveries = await client.GET('/api/v1/subscriptions/{id}/deliveries', { ...one, params: { path: { id }, query: { limit: 5 } } });
  expectStatus(deliveries, 200);
  expectStatus(await client.GET('/api/v1/subscriptions/{id}/deliveries', missing), 404);
  const delivery = deliveries.data!.results[0];
  if (!delivery) throw new Error('the replay since a time made no delivery from the task the tour created');
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/deliveries/{deliveryId}/replay', { params: { path: { id, deliveryId: delivery.id } }, headers: operator }), 202);
  expectStatus(await client.POST('/api/v1/subscriptions/{id}/deliveries/{deliveryId}/replay', { params: { path: { id, deliveryId: randomUUID() } }, headers: operator }), 404);
  expectStatus(await client.DELETE('/api/v1/subscriptions/{id}', one), 204);
  expectStatus(await client.DELETE('/api/v1/subscriptions/{id}', missing), 404);
}
