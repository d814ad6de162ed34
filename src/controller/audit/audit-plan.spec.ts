import { Principal } from '../auth/principal';
import { auditEntryOf, auditPlanOf, auditTime, outcomeOf } from './audit-plan';

const operator: Principal = { kind: 'operator', id: '00000000-0000-0000-0000-000000000000', name: 'API_TOKEN', scopes: [] };
const client: Principal = { kind: 'client', id: 'c0ffee00-0000-4000-8000-000000000001', name: 'orchestrator', scopes: ['tasks:write'] };
const writes = { operatorOnly: false as const, scope: 'tasks:write' as const };
const taskPlan = auditPlanOf('POST', 'TasksController', 'rerun', writes, { type: 'task', param: 'guid', answer: 'guid' })!;

describe('which endpoints are audited', () => {
  it('audits every method but a read on an endpoint taking an operator or client credential', () => {
    expect(taskPlan).toEqual({ action: 'tasks.rerun', resourceType: 'task', param: 'guid', answer: 'guid' });
    expect(auditPlanOf('DELETE', 'OAuthController', 'deleteClient', { operatorOnly: true }, undefined)).toEqual({
      action: 'oauth.deleteClient', resourceType: 'oauth', param: 'id', answer: 'id',
    });
    for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(auditPlanOf(method, 'TasksController', 'list', writes, undefined)).toBeNull();
  });

  it('leaves out endpoints without such a credential and the listed exclusions', () => {
    expect(auditPlanOf('POST', 'WebhooksController', 'ingest', undefined, undefined)).toBeNull();
    expect(auditPlanOf('POST', 'DispatchersController', 'heartbeat', { operatorOnly: false, scope: 'dispatchers:write' }, undefined)).toBeNull();
  });

  it('calls 2xx and 3xx succeeded, 4xx refused and 5xx failed', () => {
    expect([200, 204, 304, 400, 403, 409, 500, 503].map(outcomeOf)).toEqual(['succeeded', 'succeeded', 'succeeded', 'refused', 'refused', 'refused', 'failed', 'failed']);
  });
});

describe('the row of a request', () => {
  const request = (body: unknown, params: Record<string, string> = { guid: 'b3c1a7e2-0000-4000-8000-000000000001' }) => ({ method: 'POST', params, body, ip: '203.0.113.9' });

  it('names an OAuth client by its client_id and an operator by its token name', () => {
    expect(auditEntryOf(taskPlan, client, request({}), 201, null, null)).toMatchObject({ actorKind: 'oauth_client', actorName: client.id, actorId: client.id });
    expect(auditEntryOf(taskPlan, operator, request({}), 201, null, null)).toMatchObject({ actorKind: 'operator', actorName: 'API_TOKEN', remoteAddr: '203.0.113.9' });
  });

  it('takes the resource from the path, and the created one from the answer', () => {
    const rerun = auditEntryOf(taskPlan, operator, request({}), 201, { guid: 'new-task' }, null);
    expect(rerun).toMatchObject({ resourceId: 'b3c1a7e2-0000-4000-8000-000000000001', details: { result_id: 'new-task' } });
    const created = auditEntryOf(taskPlan, operator, request({ brief: {} }, {}), 201, { guid: 'new-task' }, null);
    expect(created).toMatchObject({ resourceId: 'new-task', details: { fields: ['brief'] } });
    expect(created.details).not.toHaveProperty('result_id');
    expect(auditEntryOf(taskPlan, operator, request({}, {}), 400, undefined, 'invalid')).toMatchObject({ resourceId: null, outcome: 'refused', details: { error: 'invalid' } });
  });

  it('keeps field names only, never a value the body carried', () => {
    const body = { client_secret: 'cs-value-1', api_key: 'ak-value-2', secret_env: { TOKEN: 'vault/token' }, 'not a name: sk-value-3': 1 };
    const row = auditEntryOf(taskPlan, operator, request(body), 200, { secret: 'whsec_value4', guid: 'x' }, null);
    expect(row.details.fields).toEqual(['api_key', 'client_secret', 'secret_env']);
    expect(JSON.stringify(row)).not.toMatch(/value|vault/);
  });

  it('keeps the other path parameters beside the resource', () => {
    const plan = auditPlanOf('POST', 'SubscriptionsController', 'replayDelivery', writes, { type: 'subscription', param: 'id', answer: 'id' })!;
    const row = auditEntryOf(plan, operator, request(undefined, { id: 'sub', deliveryId: 'del' }), 202, null, null);
    expect(row).toMatchObject({ action: 'subscriptions.replayDelivery', resourceId: 'sub', details: { params: { deliveryId: 'del' } } });
  });
});

describe('the time of a row', () => {
  it('is ISO 8601 at microseconds, rising within the process even within one microsecond', () => {
    const times = Array.from({ length: 1000 }, auditTime);
    expect(times[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(Math.abs(new Date(times[0]).getTime() - Date.now())).toBeLessThan(1000);
    expect([...times].sort()).toEqual(times);
    expect(new Set(times).size).toBe(times.length);
  });
});
