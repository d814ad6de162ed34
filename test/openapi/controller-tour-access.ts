import { randomUUID } from 'node:crypto';
import { ControllerClient } from './clients';
import { basic, expectStatus, form, FORM } from './tour';

/**
 * Every probe, auth, OAuth, dispatcher and audit operation of the controller through the typed
 * client: each success and the refusals the contract names. Answers the bearer header of a
 * client holding `tasks:read` only, for the other tour's 403s.
 */
export async function accessTour(client: ControllerClient, operator: Record<string, string>): Promise<Record<string, string>> {
  expectStatus(await client.GET('/.well-known/oauth-authorization-server'), 200);
  expectStatus(await client.GET('/livez'), 200);
  expectStatus(await client.GET('/health'), 200);
  expectStatus(await client.GET('/ready'), 200);

  expectStatus(await client.GET('/api/v1/auth/whoami', { headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/auth/whoami'), 401);
  expectStatus(await client.GET('/api/v1/auth/whoami', { headers: { authorization: 'Token not-a-token' } }), 401);

  const created = await client.POST('/api/v1/oauth/clients', { headers: operator, body: { name: 'tour', scopes: ['tasks:read'] } });
  expectStatus(created, 201);
  const { client_id: clientId, client_secret: secret } = created.data!;
  expectStatus(await client.POST('/api/v1/oauth/clients', { headers: operator, body: { name: '', scopes: [] } }), 400);

  const formToken = await client.POST('/api/v1/oauth/token', {
    body: { grant_type: 'client_credentials' }, bodySerializer: form, headers: { ...FORM, authorization: basic(clientId, secret) },
  });
  expectStatus(formToken, 200);
  const bearer = { authorization: `Bearer ${formToken.data!.access_token}` };
  expectStatus(await client.POST('/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret } }), 200);
  expectStatus(await client.POST('/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: 'wrong' } }), 401);
  expectStatus(await client.POST('/api/v1/oauth/token', { body: { grant_type: 'password' as never, client_id: clientId, client_secret: secret } }), 400);

  expectStatus(await client.GET('/api/v1/auth/whoami', { headers: bearer }), 200);
  expectStatus(await client.GET('/api/v1/oauth/clients', { headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/oauth/clients', { headers: bearer }), 403);

  const doomed = await client.POST('/api/v1/oauth/clients', { headers: operator, body: { name: 'doomed', scopes: ['tasks:read'] } });
  const doomedPath = { params: { path: { clientId: doomed.data!.client_id } }, headers: operator };
  expectStatus(await client.DELETE('/api/v1/oauth/clients/{clientId}', doomedPath), 204);
  expectStatus(await client.DELETE('/api/v1/oauth/clients/{clientId}', doomedPath), 404);

  await dispatchersTour(client, operator, bearer);
  expectStatus(await client.GET('/api/v1/audit', { headers: operator, params: { query: { action: 'oauth.createClient', limit: 5 } } }), 200);
  expectStatus(await client.GET('/api/v1/audit', { headers: operator, params: { query: { since: 'yesterday' } } }), 400);
  expectStatus(await client.GET('/api/v1/audit', { headers: bearer }), 403);
  return bearer;
}

async function dispatchersTour(client: ControllerClient, operator: Record<string, string>, bearer: Record<string, string>): Promise<void> {
  const checkin = await client.POST('/api/v1/dispatchers/checkin', {
    headers: operator,
    body: { name: 'tour', endpoint_url: 'http://127.0.0.1:9/', backends: ['local'], labels: {}, heartbeat_interval_seconds: 3600 },
  });
  expectStatus(checkin, 200);
  expectStatus(await client.POST('/api/v1/dispatchers/checkin', { headers: operator, body: { name: 'x' } as never }), 400);
  expectStatus(await client.POST('/api/v1/dispatchers/checkin', { headers: bearer, body: { name: 'x', endpoint_url: 'http://127.0.0.1:9/', backends: ['local'] } }), 403);
  const heartbeat = { dispatcher_guid: checkin.data!.dispatcher_guid, active_tasks: 0, capacity: 4 };
  expectStatus(await client.POST('/api/v1/dispatchers/heartbeat', { headers: operator, body: heartbeat }), 200);
  expectStatus(await client.POST('/api/v1/dispatchers/heartbeat', { headers: operator, body: { ...heartbeat, dispatcher_guid: randomUUID() } }), 404);
  expectStatus(await client.GET('/api/v1/dispatchers', { headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/dispatchers/{slug}', { params: { path: { slug: checkin.data!.dispatcher_slug } }, headers: operator }), 200);
  expectStatus(await client.GET('/api/v1/dispatchers/{slug}', { params: { path: { slug: 'nobody' } }, headers: operator }), 404);
  const slug = { path: { slug: checkin.data!.dispatcher_slug } };
  expectStatus(await client.POST('/api/v1/dispatchers/{slug}/rebind', { params: slug, headers: operator, body: { client_id: randomUUID() } }), 200);
  expectStatus(await client.POST('/api/v1/dispatchers/{slug}/rebind', { params: slug, headers: operator, body: { client_id: 'not-a-uuid' } }), 400);
  expectStatus(await client.POST('/api/v1/dispatchers/{slug}/rebind', { params: slug, headers: bearer, body: {} }), 403);
  expectStatus(await client.POST('/api/v1/dispatchers/{slug}/rebind', { params: { path: { slug: 'nobody' } }, headers: operator, body: {} }), 404);
  expectStatus(await client.POST('/api/v1/dispatchers/{slug}/rebind', { params: slug, headers: operator, body: {} }), 200);
}
