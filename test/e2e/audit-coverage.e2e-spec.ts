import { AUDIT_EXCLUSIONS } from '../../src/controller/audit/audit-exclusions';
import { AuditCalls, firstPathParam, StateChangingCall } from '../harness/audit-calls';
import { checkInDispatcher, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { controllerClient } from '../openapi/clients';
import { accessTour } from '../openapi/controller-tour-access';
import { workTour } from '../openapi/controller-tour-work';

const FORGE_SECRET = 'forge-secret-for-the-audit-tour';
/** The resource type each controller's operations record: a new controller must be named here. */
const RESOURCE_TYPES: Record<string, string> = {
  tasks: 'task', oauth: 'oauth_client', dispatchers: 'dispatcher', skills: 'skill', workflows: 'workflow', webhooks: 'webhook_delivery', subscriptions: 'subscription',
};

type Json = any;

/**
 * The audit trail against the controller's own OpenAPI document: the document tour calls
 * every operation (successes and refusals), and every state-changing one must have left a
 * row naming its actor, action, resource and outcome, unless AUDIT_EXCLUSIONS lists it. No
 * credential or secret that passed during the tour may appear in any row.
 */
describe('audit trail: every state-changing operation of the document', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;
  let document: Json;
  const watched = new AuditCalls();

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { FORGE_WEBHOOK_SECRET: FORGE_SECRET, AUTH_FAILURE_LIMIT: '30' } });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(system, { name: 'recorder', endpoint_url: dispatcher.url, heartbeat_interval_seconds: 3600, api_key: 'dispatcher-api-key-for-the-audit-tour' });
    document = (await http('GET', `${system.controllerUrl}/api/docs/openapi.json`)).body;
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });

  const operationId = (call: { method: string; template: string }): string => document.paths[call.template][call.method.toLowerCase()].operationId;
  const allRows = () => readAll(system);

  it('records each call of the tour, with its actor, action, resource and outcome, and no secret', async () => {
    const before = (await allRows()).length;
    const client = controllerClient(system.controllerUrl);
    client.use(watched.middleware());
    const reader = await accessTour(client, operator(system));
    await workTour(client, {
      operator: operator(system), reader, signingKey: system.config.callbackSigningKey!, forgeSecret: FORGE_SECRET,
      callbackTokenOf: (guid) => waitFor(async () => dispatcher.taskRequests.find((request) => request.body.task_id === guid)?.body.callback_token ?? null, 20_000, `task ${guid} dispatched`),
    });
    const rows = await allRows();
    const operatorName = (await http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: operator(system) })).body.name;
    const readerClientId = (await http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: reader })).body.id;

    const audited = watched.calls.filter((call) => !(operationId(call) in AUDIT_EXCLUSIONS) && knownCaller(call));
    const actual = rows.slice(before);
    expect(actual.map((row) => `${row.action} ${row.details.status_code}`)).toEqual(audited.map((call) => `${operationId(call).replace('_', '.')} ${call.status}`));
    audited.forEach((call, index) => expectRow(actual[index], call, call.authorization === reader.authorization ? { kind: 'oauth_client', name: readerClientId } : { kind: 'operator', name: operatorName }));

    const secrets = [...watched.secrets, FORGE_SECRET, system.config.callbackSigningKey!, system.apiToken, 'dispatcher-api-key-for-the-audit-tour'];
    const text = JSON.stringify(rows);
    expect(secrets.filter((secret) => text.includes(secret))).toEqual([]);
  });

  it('covers every state-changing operation of the document: called with a row, or excluded with a reason', () => {
    const operations = Object.entries(document.paths).flatMap(([template, item]: [string, Json]) =>
      Object.keys(item).filter((method) => !['get', 'parameters', 'head', 'options'].includes(method)).map((method) => operationId({ method, template })));
    const called = new Set(watched.calls.filter((call) => call.status < 300 && knownCaller(call)).map(operationId));
    expect(operations.filter((id) => !(id in AUDIT_EXCLUSIONS) && !called.has(id))).toEqual([]);
    expect(Object.keys(AUDIT_EXCLUSIONS).filter((id) => !operations.includes(id))).toEqual([]);
  });

  it('leaves no row for the excluded operations', async () => {
    const excluded = new Set(Object.keys(AUDIT_EXCLUSIONS).map((id) => id.replace('_', '.')));
    expect((await allRows()).filter((row) => excluded.has(row.action))).toEqual([]);
    expect(watched.calls.filter((call) => operationId(call) in AUDIT_EXCLUSIONS).length).toBeGreaterThan(5);
  });
});

/** A caller the controller knows (operator token or OAuth access token) and let as far as the endpoint's own rules. */
function knownCaller(call: StateChangingCall): boolean {
  return /^(Token|Bearer) /.test(call.authorization ?? '') && call.status !== 401 && call.status !== 429;
}

function expectRow(row: Json, call: StateChangingCall, actor: { kind: string; name: string }): void {
  const where = `${call.method} ${call.url} ${call.status}`;
  expect({ where, actor: row.actor, type: row.resource_type, outcome: row.outcome }).toEqual({
    where, actor, type: RESOURCE_TYPES[call.template.split('/')[3]], outcome: call.status >= 400 ? 'refused' : 'succeeded',
  });
  expect({ where, addr: row.remote_addr }).toEqual({ where, addr: expect.stringMatching(/127\.0\.0\.1$/) });
  const fromPath = firstPathParam(call.template, call.url);
  if (fromPath !== null) expect({ where, id: row.resource_id }).toEqual({ where, id: fromPath });
  else if (call.status < 300) expect({ where, inAnswer: JSON.stringify(call.answer).includes(`"${row.resource_id}"`) }).toEqual({ where, inAnswer: true });
  else expect({ where, id: row.resource_id }).toEqual({ where, id: null });
  if (call.status >= 400) expect({ where, error: row.details.error }).toEqual({ where, error: (call.answer as Json)?.code ?? (call.answer as Json)?.error });
}

/** Every audit row, oldest first, through the list itself (cursor pages of 500). */
async function readAll(system: TestSystem): Promise<Json[]> {
  const rows: Json[] = [];
  let url: string | null = `${system.controllerUrl}/api/v1/audit/?limit=500`;
  while (url) {
    const page: Json = await http('GET', url, { headers: operator(system) });
    expect(page.status).toBe(200);
    rows.push(...page.body.results);
    url = page.body.next;
  }
  return rows.reverse();
}
