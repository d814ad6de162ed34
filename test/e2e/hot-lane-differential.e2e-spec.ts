import { createHmac, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { checkInDispatcher, clientBearer, createDispatchedTask, makeTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { jsonBodyFor, OpenApiDocument, RawAnswer, sendRaw, WriteOperation, writeOperations } from '../harness/openapi-fuzz';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The controller answers its hot routes (webhooks, task creation, callbacks, progress) ahead of Express, with
 * parsing of its own; HTTP_HOT_LANE=false leaves them to the Nest routes. Two controllers, one
 * each way, with the same secrets and the same history, get the very same requests (bodies
 * generated from the OpenAPI document's schemas, and the wire's odd corners: whitespace-only
 * bodies, a UTF-8 BOM, duplicate keys, Content-Type parameters and case, chunked bodies) and
 * must give the same status and body.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const shared = { FORGE_WEBHOOK_SECRET: `forge-${randomUUID()}`, CALLBACK_SIGNING_KEY: `signing-${randomUUID()}`, AUTH_FAILURE_LIMIT: '100000' };

/** The Nest routes the hot lane answers ahead of Express (the controller's webhook-hot-routes.ts and task-hot-routes.ts), as the document names them. */
const HOT_PATHS = ['/api/v1/webhooks', '/api/v1/tasks', '/api/v1/tasks/{guid}/callback', '/api/v1/tasks/{guid}/progress'];

interface Side {
  system: TestSystem;
  recorder: RecordingDispatcher;
}

/** The wire forms of one body that clients really send. */
const WIRE_FORMS: { name: string; type: string; bytes: (json: string) => Buffer; chunked?: boolean }[] = [
  { name: 'plain', type: 'application/json', bytes: (json) => Buffer.from(json) },
  { name: 'chunked', type: 'application/json', bytes: (json) => Buffer.from(json), chunked: true },
  { name: 'upper-case type and charset', type: 'Application/JSON; Charset=UTF-8', bytes: (json) => Buffer.from(json) },
  { name: 'quoted charset', type: 'application/json;charset="utf-8"', bytes: (json) => Buffer.from(json) },
  { name: 'another parameter', type: 'application/json; profile=x', bytes: (json) => Buffer.from(json) },
  { name: 'vendor +json type', type: 'application/vnd.forge+json', bytes: (json) => Buffer.from(json) },
  { name: 'UTF-8 BOM', type: 'application/json', bytes: (json) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]) },
  { name: 'surrounding whitespace', type: 'application/json', bytes: (json) => Buffer.from(`\n\t ${json} \r\n`) },
  { name: 'whitespace only', type: 'application/json', bytes: () => Buffer.from(' \n\t ') },
  { name: 'no-break space only', type: 'application/json', bytes: () => Buffer.from('\u00a0') },
  { name: 'empty, chunked', type: 'application/json', bytes: () => Buffer.alloc(0), chunked: true },
  { name: 'duplicate keys', type: 'application/json', bytes: (json) => Buffer.from(json.replace(/^\{/, '{"status":"completed","percentage":1,"ref":"x",')) },
  { name: 'a JSON string', type: 'application/json', bytes: (json) => Buffer.from(JSON.stringify(json)) },
];

/** Ids, times and request-specific tokens differ between the two controllers; the rest must not. */
function comparable(answer: RawAnswer): unknown {
  const text = answer.text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
  return { status: answer.status, type: answer.headers['content-type'], body: text };
}

describe('the hot lane and the Nest routes, sent the same requests', () => {
  let lane: Side;
  let nest: Side;
  let document: OpenApiDocument;
  let operations: WriteOperation[];

  const start = async (hotLane: boolean): Promise<Side> => {
    const [system, recorder] = await Promise.all([
      startTestSystem({ role: 'controller', env: { ...shared, HTTP_HOT_LANE: String(hotLane) } }),
      new RecordingDispatcher().start(),
    ]);
    await checkInDispatcher(system, { name: 'recorder', endpoint_url: recorder.url, heartbeat_interval_seconds: 3600 });
    return { system, recorder };
  };

  beforeAll(async () => {
    [lane, nest] = await Promise.all([start(true), start(false)]);
    document = (await http('GET', `${lane.system.controllerUrl}/api/docs/openapi.json`)).body;
    operations = writeOperations(document).filter((operation) => HOT_PATHS.includes(operation.path));
  }, 120_000);
  afterAll(async () => {
    for (const side of [lane, nest]) await Promise.all([side?.system.close(), side?.recorder.stop()]);
  });

  /** A task dispatched on each side, with the callback token each was given. */
  async function taskOn(side: Side): Promise<{ guid: string; token: string }> {
    const task = await createDispatchedTask(side.system);
    return { guid: task.body.guid, token: side.recorder.taskRequests.find((request) => request.body.task_id === task.body.guid)!.body.callback_token };
  }

  /** Sends one request to both sides, each with its own task and token, signed over the exact bytes. */
  async function both(operation: WriteOperation, bytes: Buffer, type: string, chunked: boolean, delivery: string): Promise<[RawAnswer, RawAnswer]> {
    return Promise.all([lane, nest].map(async (side) => {
      const headers: Record<string, string> = { 'content-type': type };
      let path = operation.path;
      if (path.includes('{guid}')) {
        const { guid, token } = await taskOn(side);
        path = path.replace('{guid}', guid);
        headers.authorization = `Bearer ${token}`;
        headers['x-service-signature'] = `sha256=${createHmac('sha256', shared.CALLBACK_SIGNING_KEY).update(bytes).digest('hex')}`;
      } else if (path === '/api/v1/tasks') {
        Object.assign(headers, operator(side.system));
      } else {
        // The forge's signature (as @octokit/webhooks-methods makes it) over the exact bytes, BOM included.
        Object.assign(headers, {
          'x-github-event': 'push',
          'x-github-delivery': delivery,
          'x-hub-signature-256': `sha256=${createHmac('sha256', shared.FORGE_WEBHOOK_SECRET).update(bytes).digest('hex')}`,
        });
      }
      return sendRaw(`${side.system.controllerUrl}${path}/`, 'POST', headers, bytes, chunked);
    })) as Promise<[RawAnswer, RawAnswer]>;
  }

  it('covers the four hot routes, each a write operation of the document', () => {
    expect(operations.map((operation) => operation.path).sort()).toEqual([...HOT_PATHS].sort());
  });

  it('answers every wire form of a valid body alike', async () => {
    const differences: string[] = [];
    for (const operation of operations) {
      const sample = fc.sample(jsonBodyFor(operation, document), { numRuns: 1, seed: 7 })[0];
      for (const form of WIRE_FORMS) {
        const bytes = form.bytes(sample);
        const [onLane, onNest] = await both(operation, bytes, form.type, form.chunked ?? false, randomUUID());
        if (JSON.stringify(comparable(onLane)) !== JSON.stringify(comparable(onNest))) {
          differences.push(`${operation.path} ${form.name}: lane ${onLane.status} ${onLane.text.slice(0, 160)} / nest ${onNest.status} ${onNest.text.slice(0, 160)}`);
        }
      }
    }
    expect(differences).toEqual([]);
  }, 240_000);

  it('answers generated bodies alike', async () => {
    const differences: string[] = [];
    for (const operation of operations) {
      const wire = fc.record({ json: jsonBodyFor(operation, document), form: fc.constantFrom(...WIRE_FORMS.filter((form) => !form.name.includes('only'))) });
      await fc.assert(
        fc.asyncProperty(wire, async ({ json, form }) => {
          const [onLane, onNest] = await both(operation, form.bytes(json), form.type, form.chunked ?? false, randomUUID());
          const same = JSON.stringify(comparable(onLane)) === JSON.stringify(comparable(onNest));
          if (!same) differences.push(`${operation.path} ${form.name} ${json.slice(0, 120)}: lane ${onLane.status} ${onLane.text.slice(0, 160)} / nest ${onNest.status} ${onNest.text.slice(0, 160)}`);
          return same;
        }),
        { numRuns: RUNS, endOnFailure: true },
      ).catch((error: Error) => differences.push(`${operation.path}: ${error.message.split('\n').slice(0, 3).join(' ')}`));
    }
    expect(differences).toEqual([]);
  }, Math.max(240_000, RUNS * 3 * 1000));

  it('creates tasks for every kind of caller alike, refuses the others alike, and writes the same audit rows', async () => {
    const valid = JSON.stringify(makeTask());
    const [laneReader, nestReader, laneWriter, nestWriter] = await Promise.all([
      clientBearer(lane.system, ['tasks:read']), clientBearer(nest.system, ['tasks:read']),
      clientBearer(lane.system, ['tasks:write']), clientBearer(nest.system, ['tasks:write']),
    ]);
    const callers: { label: string; headers: (side: Side) => Record<string, string>; body?: string; query?: string }[] = [
      { label: 'operator token', headers: (side) => operator(side.system) },
      { label: 'client with tasks:write', headers: (side) => (side === lane ? laneWriter : nestWriter) },
      { label: 'client without tasks:write', headers: (side) => (side === lane ? laneReader : nestReader) },
      { label: 'client with tasks:write, invalid body', headers: (side) => (side === lane ? laneWriter : nestWriter), body: JSON.stringify({ ...makeTask(), timeout_seconds: -1 }) },
      { label: 'no credentials', headers: () => ({}) },
      { label: 'an unknown token', headers: () => ({ authorization: 'Token made-up' }) },
      { label: 'an unknown bearer token', headers: () => ({ authorization: 'Bearer made-up' }) },
      { label: 'another scheme', headers: () => ({ authorization: 'Basic dXNlcjpwYXNz' }) },
      { label: 'a bearer token with two spaces', headers: (side) => ({ authorization: (side === lane ? laneWriter : nestWriter).authorization.replace(' ', '  ') }) },
      { label: 'a bearer token in the header and the body', headers: (side) => (side === lane ? laneWriter : nestWriter), body: JSON.stringify({ ...makeTask(), access_token: 'x' }) },
      { label: 'a bearer token in the query alone', headers: () => ({}), query: '?access_token=made-up' },
    ];
    const differences: string[] = [];
    const statuses: number[] = [];
    // The rows of this test's requests only: the tests before it created tasks as the operator too.
    const since = new Date(Date.now() - 1).toISOString();
    for (const { label, headers, body, query } of callers) {
      const [onLane, onNest] = await Promise.all([lane, nest].map((side) => sendRaw(`${side.system.controllerUrl}/api/v1/tasks/${query ?? ''}`, 'POST', { 'content-type': 'application/json', ...headers(side) }, Buffer.from(body ?? valid), false)));
      statuses.push(onLane.status);
      // Each side made its own clients (clientBearer names them at random).
      const [a, b] = [onLane, onNest].map((answer) => ({ ...(comparable({ ...answer, text: answer.text.replace(/client-[\w:-]+-[a-z0-9]{1,6}\b/g, '<client>') }) as object), challenge: answer.headers['www-authenticate'] }));
      if (JSON.stringify(a) !== JSON.stringify(b)) differences.push(`${label}: lane ${onLane.status} ${onLane.text.slice(0, 160)} / nest ${onNest.status} ${onNest.text.slice(0, 160)}`);
    }
    expect(differences).toEqual([]);
    expect(statuses.slice(0, 4)).toEqual([201, 201, 403, 400]);

    // The audit rows of those requests, newest first, alike but for ids, times and the two sides' client names.
    const rows = async (side: Side) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const answer = await sendRaw(`${side.system.controllerUrl}/api/v1/audit/?action=tasks.create&limit=50&since=${encodeURIComponent(since)}`, 'GET', operator(side.system), Buffer.alloc(0), false);
      return (JSON.parse(answer.text) as { results: Record<string, unknown>[] }).results
        .map(({ actor, action, resource_type, outcome, details }) => ({ actor: (actor as { kind: string }).kind, action, resource_type, outcome, details }));
    };
    const [laneRows, nestRows] = await Promise.all([rows(lane), rows(nest)]);
    expect(laneRows.map((row) => row.outcome)).toEqual(['refused', 'refused', 'succeeded', 'succeeded']);
    expect(JSON.parse(JSON.stringify(laneRows).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')))
      .toEqual(JSON.parse(JSON.stringify(nestRows).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')));
  }, 120_000);
});
