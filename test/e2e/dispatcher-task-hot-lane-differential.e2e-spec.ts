import fc from 'fast-check';
import { makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { jsonBodyFor, OpenApiDocument, RawAnswer, sendRaw, WriteOperation, writeOperations } from '../harness/openapi-fuzz';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * The dispatcher takes tasks (`POST /tasks`) on the hot lane (dispatcher/tasks/task-hot-routes.ts);
 * HTTP_HOT_LANE=false leaves them to the Nest route. Two dispatchers, one each way, get the very
 * same requests (the valid request, again, and changed; bodies generated from the OpenAPI
 * document's schema; the wire's odd corners; each key case) and must give the same status and body.
 * Each holds one running task and may run one, so every task taken stays pending and reads alike.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const env = { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/silent': 'sleep 60' }), MAX_CONCURRENT_TASKS: '1' };

const WIRE_FORMS: { name: string; type: string; bytes: (json: string) => Buffer; chunked?: boolean }[] = [
  { name: 'plain', type: 'application/json', bytes: (json) => Buffer.from(json) },
  { name: 'chunked', type: 'application/json', bytes: (json) => Buffer.from(json), chunked: true },
  { name: 'upper-case type and charset', type: 'Application/JSON; Charset=UTF-8', bytes: (json) => Buffer.from(json) },
  { name: 'vendor +json type', type: 'application/vnd.task+json', bytes: (json) => Buffer.from(json) },
  { name: 'UTF-8 BOM', type: 'application/json', bytes: (json) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]) },
  { name: 'whitespace only', type: 'application/json', bytes: () => Buffer.from(' \n\t ') },
  { name: 'an array', type: 'application/json', bytes: (json) => Buffer.from(`[${json}]`) },
  { name: 'a JSON string', type: 'application/json', bytes: (json) => Buffer.from(JSON.stringify(json)) },
  { name: 'not JSON', type: 'application/json', bytes: () => Buffer.from('{"task_id": ') },
];

type KeyCase = 'right' | 'none' | 'wrong';

function comparable(answer: RawAnswer): unknown {
  const text = answer.text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
  return { status: answer.status, type: answer.headers['content-type'], challenge: answer.headers['www-authenticate'], body: text };
}

describe('the dispatcher task intake on the hot lane and on the Nest route, sent the same requests', () => {
  let lane: TestSystem;
  let nest: TestSystem;
  let document: OpenApiDocument;
  let operation: WriteOperation;

  beforeAll(async () => {
    [lane, nest] = await Promise.all([
      startTestSystem({ role: 'dispatcher', env: { ...env, HTTP_HOT_LANE: 'true' } }),
      startTestSystem({ role: 'dispatcher', env: { ...env, HTTP_HOT_LANE: 'false' } }),
    ]);
    await Promise.all([lane, nest].map(async (system) => {
      const holder = makeTaskRequest({ agent_image: 'test/silent' });
      expect((await taskApi(system).create(holder)).status).toBe(201);
      await waitForStatus(system, holder.task_id, ['starting', 'running']);
    }));
    document = (await sendRaw(`${lane.dispatcherUrl}/api/docs/openapi.json`, 'GET', {}, '')).body as OpenApiDocument;
    operation = writeOperations(document).find((candidate) => candidate.path === '/tasks')!;
  }, 120_000);
  afterAll(async () => {
    await Promise.all([lane?.close(), nest?.close()]);
  });

  function both(bytes: Buffer, type: string, keyCase: KeyCase, chunked = false): Promise<[RawAnswer, RawAnswer]> {
    return Promise.all([lane, nest].map((system) => {
      const headers: Record<string, string> = { 'content-type': type };
      if (keyCase === 'right') headers['x-api-key'] = system.apiKey;
      if (keyCase === 'wrong') headers['x-api-key'] = 'made-up';
      return sendRaw(`${system.dispatcherUrl}/tasks`, 'POST', headers, bytes, chunked);
    })) as Promise<[RawAnswer, RawAnswer]>;
  }

  const describeDifference = (label: string, onLane: RawAnswer, onNest: RawAnswer) =>
    `${label}: lane ${onLane.status} ${onLane.text.slice(0, 200)} / nest ${onNest.status} ${onNest.text.slice(0, 200)}`;

  it('is the document\'s write operation POST /tasks', () => {
    expect(operation).toBeDefined();
  });

  it('takes a task, takes it again, refuses it changed, and answers every wire form and key case alike', async () => {
    const differences: string[] = [];
    const statuses: number[] = [];
    const request = makeTaskRequest({ agent_image: 'test/silent' });
    const sequence = [
      { label: 'new', json: JSON.stringify(request), form: WIRE_FORMS[0], keyCase: 'right' as KeyCase },
      { label: 'the same again', json: JSON.stringify(request), form: WIRE_FORMS[0], keyCase: 'right' as KeyCase },
      { label: 'changed', json: JSON.stringify({ ...request, timeout_seconds: 61 }), form: WIRE_FORMS[0], keyCase: 'right' as KeyCase },
      ...WIRE_FORMS.map((form) => ({ label: form.name, json: JSON.stringify(makeTaskRequest({ agent_image: 'test/silent' })), form, keyCase: 'right' as KeyCase })),
      { label: 'no key', json: JSON.stringify(makeTaskRequest()), form: WIRE_FORMS[0], keyCase: 'none' as KeyCase },
      { label: 'wrong key', json: JSON.stringify(makeTaskRequest()), form: WIRE_FORMS[0], keyCase: 'wrong' as KeyCase },
      { label: 'unmapped image', json: JSON.stringify(makeTaskRequest({ agent_image: 'nowhere/none' })), form: WIRE_FORMS[0], keyCase: 'right' as KeyCase },
    ];
    for (const { label, json, form, keyCase } of sequence) {
      const [onLane, onNest] = await both(form.bytes(json), form.type, keyCase, form.chunked);
      statuses.push(onLane.status);
      if (JSON.stringify(comparable(onLane)) !== JSON.stringify(comparable(onNest))) differences.push(describeDifference(label, onLane, onNest));
    }
    expect(differences).toEqual([]);
    // The comparison covered the route's work: taken, taken again, a conflict, then the wire forms, then the refusals.
    expect(statuses.slice(0, 4)).toEqual([201, 200, 409, 201]);
    expect(statuses.slice(-3)).toEqual([401, 401, 400]);
  }, 240_000);

  it('answers generated bodies alike', async () => {
    const differences: string[] = [];
    const wire = fc.record({ json: jsonBodyFor(operation, document), form: fc.constantFrom(...WIRE_FORMS.slice(0, 5)) });
    await fc.assert(
      fc.asyncProperty(wire, async ({ json, form }) => {
        const [onLane, onNest] = await both(form.bytes(json), form.type, 'right', form.chunked);
        const same = JSON.stringify(comparable(onLane)) === JSON.stringify(comparable(onNest));
        if (!same) differences.push(describeDifference(`${form.name} ${json.slice(0, 120)}`, onLane, onNest));
        return same;
      }),
      { numRuns: RUNS, endOnFailure: true },
    ).catch((error: Error) => differences.push(error.message.split('\n').slice(0, 3).join(' ')));
    expect(differences).toEqual([]);
  }, Math.max(240_000, RUNS * 2000));
});
