import { createHmac, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { checkInDispatcher, clientBearer, createDispatchedTask, operator } from '../harness/controller-tasks';
import { makeTaskRequest, taskApi } from '../harness/dispatcher';
import { http } from '../harness/http';
import { formOf, jsonBodyFor, OpenApiDocument, sendRaw, WriteOperation, writeOperations } from '../harness/openapi-fuzz';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow } from '../harness/webhooks';

/**
 * Every write operation each role's served OpenAPI document lists (an operation added to the
 * API is fuzzed with no edit here), the controller's hot lane included, gets FUZZ_RUNS
 * generated requests: bodies shaped by the operation's schema, the same with one leaf bent
 * (NUL, lone surrogates, huge numbers, deep nesting, any JSON), or any JSON at all; in each of
 * the media types the operation declares, sent with a length or chunked, with valid
 * credentials (and signatures) so the body is read. None may answer 5xx, and every refusal
 * keeps its role's error shape. A longer run is the same spec with a larger FUZZ_RUNS.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const FORGE_SECRET = `forge-${randomUUID()}`;

interface Target {
  system: TestSystem;
  base: string;
  document: OpenApiDocument;
  /** Path parameters of real resources, by parameter name (others get a fresh UUID). */
  params: Record<string, string>;
  /** Headers for a request of `operation` carrying exactly `raw`. */
  headers(operation: WriteOperation, raw: string): Promise<Record<string, string>>;
}

let failures: string[] = [];

async function fuzz(target: Target, operation: WriteOperation): Promise<void> {
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(target.params[name] ?? randomUUID()));
  const media = operation.mediaTypes.length ? operation.mediaTypes : ['application/json'];
  const wire = fc.record({ body: jsonBodyFor(operation, target.document), media: fc.constantFrom(...media), chunked: fc.boolean() });
  await fc.assert(
    fc.asyncProperty(wire, async ({ body, media: type, chunked }) => {
      const raw = type === 'application/x-www-form-urlencoded' ? formOf(body) : body;
      const headers = { ...(await target.headers(operation, raw)), 'content-type': type === 'multipart/form-data' ? `${type}; boundary=fuzz` : type };
      const answer = await sendRaw(`${target.base}${path}`, operation.method, headers, raw, chunked);
      const problem = refusalProblem(operation, answer.status, answer.body);
      if (problem) failures.push(`${operation.method} ${operation.path} ${type}${chunked ? ' chunked' : ''}: ${problem} for ${raw.slice(0, 200)}`);
      return problem === null;
    }),
    { numRuns: RUNS, endOnFailure: true },
  ).catch((error: Error) => {
    // A case that answered 5xx is listed already; a request that threw (a reset connection) is listed here.
    failures.push(`${operation.method} ${operation.path}: ${error.message.split('\n').filter((line) => line.trim()).slice(0, 8).join(' ')}`);
  });
}

function refusalProblem(operation: WriteOperation, status: number, body: any): string | null {
  if (status >= 500) return `${status} ${JSON.stringify(body).slice(0, 200)}`;
  if (status < 400) return null;
  // The token endpoint answers RFC 6749 errors; a body refused before it is read (not JSON, too deep) keeps the controller's shape.
  if (operation.path.startsWith('/api/v1/oauth/token') && typeof body?.error === 'string') return null;
  if (operation.path.startsWith('/api/')) return typeof body?.detail === 'string' && typeof body?.code === 'string' ? null : `${status} not in the controller's error shape`;
  return body?.ok === false && typeof body?.error?.code === 'string' ? null : `${status} not in the dispatcher's error shape`;
}

async function served(base: string): Promise<OpenApiDocument> {
  const answer = await http('GET', `${base}/api/docs/openapi.json`);
  return answer.body as OpenApiDocument;
}

describe('fuzz generated from the OpenAPI documents', () => {
  let controller: TestSystem;
  let dispatcher: TestSystem;
  let recorder: RecordingDispatcher;

  beforeAll(async () => {
    [controller, dispatcher, recorder] = await Promise.all([
      startTestSystem({ role: 'controller', env: { FORGE_WEBHOOK_SECRET: FORGE_SECRET, AUTH_FAILURE_LIMIT: '100000' } }),
      startTestSystem({ role: 'dispatcher' }),
      new RecordingDispatcher().start(),
    ]);
    await checkInDispatcher(controller, { name: 'recorder', endpoint_url: recorder.url, heartbeat_interval_seconds: 3600 });
  }, 120_000);
  afterAll(async () => {
    await Promise.all([controller?.close(), dispatcher?.close(), recorder?.stop()]);
  });
  beforeEach(() => {
    failures = [];
  });

  it('gives no 5xx on any controller write operation, the hot lane included', async () => {
    const document = await served(controller.controllerUrl);
    const task = await createDispatchedTask(controller);
    const callbackToken: string = recorder.taskRequests.find((request) => request.body.task_id === task.body.guid)!.body.callback_token;
    const workflow = makeWorkflow(`fuzz-${randomUUID().slice(0, 8)}`);
    await http('POST', `${controller.controllerUrl}/api/v1/workflows/`, { headers: operator(controller), json: workflow });
    const skill = await http('POST', `${controller.controllerUrl}/api/v1/skills/`, { headers: operator(controller), json: { name: `fuzz ${randomUUID()}`, description: 'd', category: 'tool' } });
    const client = await http('POST', `${controller.controllerUrl}/api/v1/oauth/clients/`, { headers: operator(controller), json: { name: `fuzz-${randomUUID()}`, scopes: ['tasks:read'] } });
    const basic = `Basic ${Buffer.from(`${client.body.client_id}:${client.body.client_secret}`).toString('base64')}`;
    expect(await clientBearer(controller, ['tasks:read'])).toBeDefined();
    const target: Target = {
      system: controller,
      base: controller.controllerUrl,
      document,
      params: { guid: task.body.guid, id: String(workflow.id), slug: skill.body.slug },
      async headers(operation, raw) {
        if (operation.security.includes('token')) return operator(controller);
        if (operation.security.includes('callback_token')) {
          return { authorization: `Bearer ${callbackToken}`, 'x-service-signature': `sha256=${createHmac('sha256', controller.config.callbackSigningKey!).update(raw).digest('hex')}` };
        }
        if (operation.security.includes('client_basic')) return { authorization: basic };
        // The document names no scheme for webhook ingest: each source signs its own way; the forge's here.
        if (operation.path.startsWith('/api/v1/webhooks')) {
          // As @octokit/webhooks-methods signs, which refuses to sign an empty payload.
          return { 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': `sha256=${createHmac('sha256', FORGE_SECRET).update(raw).digest('hex')}` };
        }
        return {};
      },
    };
    const operations = writeOperations(document);
    expect(operations.map((operation) => `${operation.method} ${operation.path}`)).toEqual(expect.arrayContaining([
      'POST /api/v1/webhooks', 'POST /api/v1/tasks/{guid}/callback', 'POST /api/v1/tasks/{guid}/progress',
      'POST /api/v1/oauth/token', 'PUT /api/v1/workflows/{id}', 'POST /api/v1/tasks',
    ]));
    for (const operation of operations) await fuzz(target, operation);
    expect(failures).toEqual([]);
  }, Math.max(240_000, RUNS * 20 * 400));

  it('gives no 5xx on any dispatcher write operation', async () => {
    const document = await served(dispatcher.dispatcherUrl);
    const task = await taskApi(dispatcher).create(makeTaskRequest());
    expect(task.status).toBe(201);
    const target: Target = {
      system: dispatcher,
      base: dispatcher.dispatcherUrl,
      document,
      params: { taskId: task.body.data.task_id, key: 'fuzz/result.txt' },
      async headers(operation): Promise<Record<string, string>> {
        if (operation.security.includes('api_key')) return { 'x-api-key': dispatcher.apiKey };
        if (operation.security.includes('agent_key')) return { 'x-agent-key': dispatcher.agentKey };
        return {};
      },
    };
    const operations = writeOperations(document);
    expect(operations.map((operation) => `${operation.method} ${operation.path}`)).toEqual(expect.arrayContaining([
      'POST /tasks', 'POST /tasks/{taskId}/cancel', 'POST /agent/checkin', 'POST /agent/progress', 'POST /agent/checkback',
    ]));
    for (const operation of operations) await fuzz(target, operation);
    expect(failures).toEqual([]);
  }, Math.max(240_000, RUNS * 10 * 400));
});
