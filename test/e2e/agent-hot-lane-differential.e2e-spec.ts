import fc from 'fast-check';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { agentKeyOf, makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { jsonBodyFor, OpenApiDocument, RawAnswer, sendRaw, WriteOperation, writeOperations } from '../harness/openapi-fuzz';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The dispatcher answers the agent protocol's check-in, progress and check-back on the hot
 * lane (agent-hot-routes.ts); HTTP_HOT_LANE=false leaves them to the Nest routes. Two
 * dispatchers, one each way, each with a started task per request, get the very same requests
 * (bodies generated from the OpenAPI document's schemas, the wire's odd corners, and each key
 * case: the task's own key, none, a made-up one) and must give the same status and body.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 15);
// The agent never speaks: each request plays it.
const env = { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/silent': 'sleep 60' }), MAX_CONCURRENT_TASKS: '1000' };
const HOT_PATHS = ['/agent/checkin', '/agent/progress', '/agent/checkback'];

const WIRE_FORMS: { name: string; type: string; bytes: (json: string) => Buffer; chunked?: boolean }[] = [
  { name: 'plain', type: 'application/json', bytes: (json) => Buffer.from(json) },
  { name: 'chunked', type: 'application/json', bytes: (json) => Buffer.from(json), chunked: true },
  { name: 'upper-case type and charset', type: 'Application/JSON; Charset=UTF-8', bytes: (json) => Buffer.from(json) },
  { name: 'vendor +json type', type: 'application/vnd.agent+json', bytes: (json) => Buffer.from(json) },
  { name: 'UTF-8 BOM', type: 'application/json', bytes: (json) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]) },
  { name: 'whitespace only', type: 'application/json', bytes: () => Buffer.from(' \n\t ') },
  { name: 'empty, chunked', type: 'application/json', bytes: () => Buffer.alloc(0), chunked: true },
  { name: 'a JSON string', type: 'application/json', bytes: (json) => Buffer.from(JSON.stringify(json)) },
  { name: 'not JSON', type: 'application/json', bytes: () => Buffer.from('{"task_id": ') },
];

type KeyCase = 'own' | 'none' | 'made-up';

function comparable(answer: RawAnswer): unknown {
  const text = answer.text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
  return { status: answer.status, type: answer.headers['content-type'], challenge: answer.headers['www-authenticate'], body: text };
}

/** The generated body with its task_id (when it has one) made the side's own task. */
function withTask(json: string, taskId: string): string {
  try {
    const value = JSON.parse(json);
    if (value && typeof value === 'object' && !Array.isArray(value) && 'task_id' in value) return JSON.stringify({ ...value, task_id: taskId });
  } catch {
    // not JSON: sent as it is
  }
  return json;
}

describe('the agent hot lane and the Nest routes, sent the same requests', () => {
  let lane: TestSystem;
  let nest: TestSystem;
  let document: OpenApiDocument;
  let operations: WriteOperation[];

  beforeAll(async () => {
    [lane, nest] = await Promise.all([
      startTestSystem({ role: 'dispatcher', env: { ...env, HTTP_HOT_LANE: 'true' } }),
      startTestSystem({ role: 'dispatcher', env: { ...env, HTTP_HOT_LANE: 'false' } }),
    ]);
    document = (await sendRaw(`${lane.dispatcherUrl}/api/docs/openapi.json`, 'GET', {}, '')).body as OpenApiDocument;
    operations = writeOperations(document).filter((operation) => HOT_PATHS.includes(operation.path));
  }, 120_000);
  afterAll(async () => {
    await Promise.all([lane?.close(), nest?.close()]);
  });

  async function startedTask(system: TestSystem): Promise<string> {
    const request = makeTaskRequest({ agent_image: 'test/silent' });
    await createObjectStorage(system.config).put(request.brief_key, Buffer.from('{"brief":true}'));
    await taskApi(system).create(request);
    await waitForStatus(system, request.task_id, ['starting']);
    return request.task_id;
  }

  /** Sends one request to both sides, each naming a started task of its own. */
  function both(path: string, json: string, form: (typeof WIRE_FORMS)[number], keyCase: KeyCase): Promise<[RawAnswer, RawAnswer]> {
    return Promise.all([lane, nest].map(async (system) => {
      const taskId = await startedTask(system);
      const headers: Record<string, string> = { 'content-type': form.type };
      if (keyCase === 'own') headers['x-agent-key'] = agentKeyOf(system, taskId);
      if (keyCase === 'made-up') headers['x-agent-key'] = 'made-up';
      return sendRaw(`${system.dispatcherUrl}${path}`, 'POST', headers, form.bytes(withTask(json, taskId)), form.chunked ?? false);
    })) as Promise<[RawAnswer, RawAnswer]>;
  }

  it('covers the three agent routes, each a write operation of the document', () => {
    expect(operations.map((operation) => operation.path).sort()).toEqual([...HOT_PATHS].sort());
  });

  it('answers every wire form and key case of a valid body alike', async () => {
    const valid: Record<string, string> = {
      '/agent/checkin': '{"task_id":"x"}',
      '/agent/progress': '{"task_id":"x","percentage":40,"message":"busy","data":{"n":1}}',
      '/agent/checkback': '{"task_id":"x","status":"completed","result_key":"results/r.txt","result_metadata":{},"error":""}',
    };
    const differences: string[] = [];
    const plainStatuses: number[] = [];
    const cases = HOT_PATHS.flatMap((path) => [
      ...WIRE_FORMS.map((form) => ({ path, form, keyCase: 'own' as KeyCase })),
      { path, form: WIRE_FORMS[0], keyCase: 'none' as KeyCase },
      { path, form: WIRE_FORMS[0], keyCase: 'made-up' as KeyCase },
    ]);
    for (const { path, form, keyCase } of cases) {
      const [onLane, onNest] = await both(path, valid[path], form, keyCase);
      if (form.name === 'plain' && keyCase === 'own') plainStatuses.push(onLane.status);
      if (JSON.stringify(comparable(onLane)) !== JSON.stringify(comparable(onNest))) {
        differences.push(`${path} ${form.name} key ${keyCase}: lane ${onLane.status} ${onLane.text.slice(0, 160)} / nest ${onNest.status} ${onNest.text.slice(0, 160)}`);
      }
    }
    expect(differences).toEqual([]);
    // The valid body with the task's own key was taken, so the comparison covered the routes' work too.
    expect(plainStatuses).toEqual([200, 200, 200]);
  }, 240_000);

  it('answers generated bodies alike', async () => {
    const differences: string[] = [];
    for (const operation of operations) {
      const wire = fc.record({ json: jsonBodyFor(operation, document), form: fc.constantFrom(...WIRE_FORMS.slice(0, 5)) });
      await fc.assert(
        fc.asyncProperty(wire, async ({ json, form }) => {
          const [onLane, onNest] = await both(operation.path, json, form, 'own');
          const same = JSON.stringify(comparable(onLane)) === JSON.stringify(comparable(onNest));
          if (!same) differences.push(`${operation.path} ${form.name} ${json.slice(0, 120)}: lane ${onLane.status} ${onLane.text.slice(0, 160)} / nest ${onNest.status} ${onNest.text.slice(0, 160)}`);
          return same;
        }),
        { numRuns: RUNS, endOnFailure: true },
      ).catch((error: Error) => differences.push(`${operation.path}: ${error.message.split('\n').slice(0, 3).join(' ')}`));
    }
    expect(differences).toEqual([]);
  }, Math.max(240_000, RUNS * 3 * 2000));
});
