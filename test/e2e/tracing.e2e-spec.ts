import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { exportTo, LoggedServer, OtlpReceiver, ReceivedSpan } from '../harness/otlp';
import { testEnv } from '../harness/system';
import { runTracedWebhookTask } from '../harness/traced-webhook';
import { waitFor } from '../harness/wait';

// The server runs from dist/ (the SDK must patch modules before they load): `npm run build` first.
jest.setTimeout(120_000);

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

/** The sender's own trace: the webhook's traceparent names this trace and span. */
const SENDER_TRACE = randomBytes(16).toString('hex');
const SENDER_SPAN = randomBytes(8).toString('hex');

interface Started {
  server: LoggedServer;
  env: Record<string, string | undefined>;
  url: string;
}

async function startServer(settings: Record<string, string>, storage: 'folder' | 's3' = 'folder'): Promise<Started> {
  const env = await testEnv({ role: 'all', storage, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json', FORGE_WEBHOOK_SECRET: 'forge-secret', ...settings } });
  const url = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
  return { server: await new LoggedServer(env).start(`${url}/health/`), env, url };
}

/** The routed push's task, sent with the sender's traceparent; it must complete. */
async function runWebhookTask(started: Started, workflowId: string): Promise<{ guid: string; view: Record<string, unknown> }> {
  const ran = await runTracedWebhookTask(started, { workflowId, traceparent: `00-${SENDER_TRACE}-${SENDER_SPAN}-01` });
  expect(ran.view.status).toBe('completed');
  return ran;
}

describe('one trace per task, from the webhook to the callback', () => {
  let receiver: OtlpReceiver;
  let started: Started;
  let taskGuid: string;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    // The SDK's own warnings (an operation on an ended span, an export that failed) reach stderr.
    started = await startServer({ ...exportTo(receiver), OTEL_LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await started?.server.stop();
    await receiver?.stop();
  });

  it('joins the sender\'s trace and links the dispatch loop to it, down to the agent\'s own calls and the close', async () => {
    const { guid, view } = await runWebhookTask(started, 'traced');
    taskGuid = guid;
    expect(view.trace_id).toBe(SENDER_TRACE);

    // Each process exports in batches of its own: wait until the last spans of both roles are in.
    const last = ['close task', 'send callback', 'POST /agent/checkback'];
    const all = await waitFor(async () => {
      const spans = await receiver.spans();
      return last.every((name) => spans.some((span) => span.traceId === SENDER_TRACE && span.name === name)) ? spans : null;
    }, 20_000, `the spans ${last.join(', ')} to be exported`);
    const trace = all.filter((span) => span.traceId === SENDER_TRACE);
    const one = (name: string | RegExp, kind?: number) => {
      const found = trace.filter((span) => (typeof name === 'string' ? span.name === name : name.test(span.name)) && (kind === undefined || span.kind === kind));
      expect(found.map((span) => span.name)).toEqual([found[0]?.name ?? String(name)]);
      return found[0];
    };
    const byId = new Map(trace.map((span) => [span.spanId, span]));
    const descends = (span: ReceivedSpan, ancestor: ReceivedSpan) => {
      for (let at: ReceivedSpan | undefined = span; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) {
        if (at.parentSpanId === ancestor.spanId) return true;
      }
      return false;
    };

    const ingest = one(/^POST \/api\/v1\/webhooks/, SERVER);
    expect(ingest.parentSpanId).toBe(SENDER_SPAN);
    // The HTTP semantic conventions' attributes, on the hot lane's spans as on the Express routes'.
    expect(ingest.attributes).toMatchObject({
      'http.request.method': 'POST', 'http.route': '/api/v1/webhooks', 'url.path': '/api/v1/webhooks/', 'url.scheme': 'http',
      'http.response.status_code': 200, 'server.port': expect.any(Number), 'client.address': '127.0.0.1', 'network.protocol.version': '1.1',
    });
    // The pg instrumentation's span of the statement that stored the delivery and its task, inside the request.
    expect(trace.some((span) => span.name.startsWith('pg.query') && descends(span, ingest))).toBe(true);
    const store = one('send controller.tasks', PRODUCER);
    expect(descends(store, ingest)).toBe(true);
    expect(store.attributes).toMatchObject({ 'task.guid': guid, 'task.workflow_id': 'traced', 'messaging.destination.name': 'controller.tasks' });

    // The loop's batch span is a trace of its own, linked to the request that stored the task.
    const batch = all.find((span) => span.name === 'receive controller.tasks' && span.links.some((link) => link.spanId === store.spanId));
    expect(batch).toMatchObject({ kind: CONSUMER, parentSpanId: null, links: expect.arrayContaining([expect.objectContaining({ traceId: SENDER_TRACE, spanId: store.spanId })]) });
    expect(batch!.traceId).not.toBe(SENDER_TRACE);
    const handOff = one('process controller.tasks', CONSUMER);
    expect(handOff.parentSpanId).toBe(store.spanId);
    expect(handOff.links).toEqual([expect.objectContaining({ traceId: batch!.traceId, spanId: batch!.spanId })]);

    const create = one('POST /tasks', SERVER);
    // The hand-off's request is the project's own HTTP client span, made once: the fetch
    // instrumentation leaves it alone.
    const submit = byId.get(create.parentSpanId!);
    expect(submit).toMatchObject({
      name: 'POST', kind: CLIENT, scope: 'agent-task-http', parentSpanId: handOff.spanId,
      attributes: { 'http.request.method': 'POST', 'url.full': `http://127.0.0.1:${started.env.DISPATCHER_PORT}/tasks`, 'server.address': '127.0.0.1', 'server.port': Number(started.env.DISPATCHER_PORT), 'http.response.status_code': 201 },
    });
    const start = one('start agent');
    expect(descends(start, create)).toBe(true);
    expect(start.attributes).toMatchObject({ 'task.dispatcher_task_id': guid, 'task.agent_image': 'agent-examples/echo', 'task.runtime': 'local' });
    // Sent by the agent SDK from inside the agent process, with TRACEPARENT naming the start.
    for (const call of ['POST /agent/checkin', 'POST /agent/progress', 'POST /agent/checkback']) {
      expect(trace.filter((span) => span.name === call && span.kind === SERVER && span.parentSpanId === start.spanId).length).toBeGreaterThan(0);
    }
    const callback = one('send callback', PRODUCER);
    expect(descends(callback, create)).toBe(true);
    const received = one(/^POST \/api\/v1\/tasks\/:guid\/callback/, SERVER);
    expect(byId.get(received.parentSpanId!)).toMatchObject({ name: 'POST', kind: CLIENT, scope: 'agent-task-http', parentSpanId: callback.spanId, attributes: expect.objectContaining({ 'http.response.status_code': 200 }) });
    expect(trace.filter((span) => span.scope === '@opentelemetry/instrumentation-undici' && descends(span, handOff))).toEqual([]);
    const close = one('close task');
    expect(close.parentSpanId).toBe(received.spanId);
    expect(close.attributes).toMatchObject({ 'task.guid': guid, 'task.status': 'completed' });

    // Every span about this task is in this one trace (the loop's batch span only links to it).
    const aboutTask = all.filter((span) => span.attributes['task.guid'] === guid || span.attributes['task.dispatcher_task_id'] === guid);
    expect(new Set(aboutTask.map((span) => span.traceId))).toEqual(new Set([SENDER_TRACE]));
    expect(trace.some((span) => span.name.startsWith('pg.query'))).toBe(true);
  });

  it('writes the trace and span ids on the log lines of that task\'s life', async () => {
    const lines = started.server.lines;
    const about = (message: string) => lines.filter((line) => line.msg === message && (line.taskId === taskGuid || line.task === taskGuid));
    const messages = ['Task accepted', 'Agent submitted', 'Callback delivered', 'Task finished'];
    // Standard output is written in blocks, up to 100 ms after the line (shared/logging).
    await waitFor(async () => messages.every((message) => about(message).length > 0) || null, 5_000, `the log lines ${messages.join(', ')}`);
    for (const message of messages) {
      const found = about(message);
      expect(found.length).toBeGreaterThan(0);
      expect(found.every((line) => line.trace_id === SENDER_TRACE && typeof line.span_id === 'string')).toBe(true);
    }
    const webhookAccess = lines.find((line) => line.msg === 'request completed' && String(line.url).startsWith('/api/v1/webhooks'));
    expect(webhookAccess).toMatchObject({ trace_id: SENDER_TRACE });
  });

  it('keeps each line\'s role and request id with the trace: in requests, in the loops, and where work leaves a trace', () => {
    const lines = started.server.lines;
    const about = (message: string) => lines.filter((line) => line.msg === message && (line.taskId === taskGuid || line.task === taskGuid));
    // A request's lines: the role and the request id it answered with, beside the trace ids.
    expect(about('Task accepted')).toEqual([expect.objectContaining({ role: 'dispatcher', request_id: expect.any(String), trace_id: SENDER_TRACE })]);
    const webhookAccess = lines.find((line) => line.msg === 'request completed' && String(line.url).startsWith('/api/v1/webhooks'));
    expect(webhookAccess).toMatchObject({ role: 'controller', request_id: expect.any(String) });
    // A loop's round runs outside every trace and opens the task's own spans: the role stays.
    for (const line of [...about('Agent submitted'), ...about('Callback delivered')]) expect(line.role).toBe('dispatcher');
    // The controller closes the task in the callback's request; the dispatcher's own line may come later.
    const finished = about('Task finished');
    expect(finished.find((line) => 'task' in line)).toMatchObject({ role: 'controller', request_id: expect.any(String) });
    for (const line of finished) expect(['controller', 'dispatcher']).toContain(line.role);
    // Lines of the roles' loops that belong to no task still say whose they are (the boot's own are the process's).
    const loopLines = lines.filter((line) => line.context !== undefined && line.msg !== 'request completed' && !('request_id' in line));
    expect(loopLines.length).toBeGreaterThan(0);
    expect(loopLines.filter((line) => line.role === undefined && line.context !== 'Boot').map((line) => `${line.context}: ${line.msg}`)).toEqual([]);
  });

  it('never changes a span after its end (the SDK warns of each, and builds an Error for it)', () => {
    expect(started.server.otherLines.filter((line) => /ended span/i.test(line))).toEqual([]);
  });
});

describe('object storage calls, traced', () => {
  let receiver: OtlpReceiver;
  let started: Started;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    started = await startServer(exportTo(receiver), 's3');
  });
  afterAll(async () => {
    await started?.server.stop();
    await receiver?.stop();
  });

  it('are spans of their own, named as the AWS SDK names them, with no HTTP client span of the store\'s requests', async () => {
    const { guid } = await runWebhookTask(started, 'stored');
    const all = await waitFor(async () => {
      const spans = await receiver.spans();
      return spans.some((span) => span.traceId === SENDER_TRACE && span.name === 'close task' && span.attributes['task.guid'] === guid) ? spans : null;
    }, 20_000, 'the task\'s spans to be exported');
    const port = Number(new URL(started.env.S3_ENDPOINT!).port);
    const storage = all.filter((span) => span.name.startsWith('S3.'));
    for (const span of storage) {
      expect(span).toMatchObject({ kind: CLIENT, attributes: expect.objectContaining({ 'rpc.system': 'aws-api', 'rpc.service': 'S3', 'aws.s3.bucket': started.env.S3_BUCKET, 'server.port': port }) });
      expect(span.name).toBe(`S3.${String(span.attributes['rpc.method'])}`);
    }
    // The brief, written by the dispatch loop's batch that took the task.
    const store = all.find((span) => span.name === 'send controller.tasks' && span.attributes['task.guid'] === guid)!;
    const batch = all.find((span) => span.name === 'receive controller.tasks' && span.links.some((link) => link.spanId === store.spanId))!;
    expect(storage.filter((span) => span.name === 'S3.PutObject' && span.parentSpanId === batch.spanId).length).toBe(1);
    // Read inside the task's trace: under a request of the agent's.
    expect(storage.some((span) => span.name === 'S3.GetObject' && span.traceId === SENDER_TRACE)).toBe(true);
    // The http instrumentation leaves the store's requests to these spans.
    expect(all.filter((span) => span.scope === '@opentelemetry/instrumentation-http' && span.kind === CLIENT)).toEqual([]);
  });
});

describe('with tracing off', () => {
  let receiver: OtlpReceiver;
  let started: Started;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    // OTEL_SDK_DISABLED wins over an endpoint that is set.
    started = await startServer({ ...exportTo(receiver), OTEL_SDK_DISABLED: 'true' });
  });
  afterAll(async () => {
    await started?.server.stop();
    await receiver?.stop();
  });

  it('exports nothing, and still keeps the sender\'s trace id on the task and forwards it to the dispatcher', async () => {
    const { guid, view } = await runWebhookTask(started, 'untraced');
    expect(view.trace_id).toBe(SENDER_TRACE);
    const db = new Client({ connectionString: started.env.DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query('SELECT trace_parent FROM dispatcher.tasks WHERE task_id = $1', [guid]);
      expect(rows).toEqual([{ trace_parent: `00-${SENDER_TRACE}-${SENDER_SPAN}-01` }]);
    } finally {
      await db.end();
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await receiver.spans()).toEqual([]);
    expect(started.server.lines.some((line) => 'trace_id' in line)).toBe(false);
  });
});
