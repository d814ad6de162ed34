import { DataSource } from 'typeorm';
import { ControllerRetention } from '../../src/controller/controller-retention';
import { checkInDispatcher, createTask, getTask, operator } from '../harness/controller-tasks';
import { openEventStream } from '../harness/events';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { startControllerReplica, startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

// Replica B runs from dist/: `npm run build` first.
jest.setTimeout(90_000);

/**
 * The event stream across two controller replicas (one process each, one database): a
 * client of replica B sees what replica A writes, in order, and resumes with Last-Event-ID
 * without missing any event.
 */
describe('GET /api/v1/events/ across controller replicas', () => {
  let a: TestSystem;
  let b: RoleProcess;
  let bUrl: string;
  const streams: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    a = await startTestSystem({ role: 'all', storage: 's3' });
    ({ process: b, url: bUrl } = await startControllerReplica(a));
  });
  afterAll(async () => {
    for (const stream of streams) await stream.close();
    await b?.stop();
    await a?.close();
  });

  const streamOnB = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await openEventStream(`${bUrl}/api/v1/events/${query}`, { ...operator(a), ...headers });
    streams.push(stream);
    return stream;
  };

  it('shows on replica B a task created on replica A going to completed, in order', async () => {
    const stream = await streamOnB();
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const created = await createTask(a, { brief: { prompt: 'events' } });
    const guid = created.body.guid as string;
    await waitFor(() => stream.of(guid).some((event) => event.event === 'task.finished'), 40_000, 'task.finished on replica B');
    const seen = stream.of(guid);
    expect(seen[0]).toMatchObject({ event: 'task.created', data: { task_guid: guid, status: 'pending' } });
    expect(seen.at(-1)).toMatchObject({ event: 'task.finished', data: { task_guid: guid, status: 'completed', dispatcher_slug: 'local' } });
    expect(seen.map((event) => event.data.status)).toEqual(expect.arrayContaining(['pending', 'dispatched', 'running', 'completed']));
    const ids = seen.map((event) => event.id);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
  });

  it('resumes with Last-Event-ID without missing an event written while away', async () => {
    const first = await streamOnB();
    const created = await createTask(a, { brief: { prompt: 'resume' } });
    const guid = created.body.guid as string;
    const before = await waitFor(() => first.of(guid)[0], 20_000, 'task.created');
    await first.close();
    await waitFor(async () => (await getTask(a, guid)).body.status === 'completed', 40_000, 'the task to complete');

    const resumed = await streamOnB('', { 'Last-Event-ID': String(before.id) });
    await waitFor(() => resumed.of(guid).some((event) => event.event === 'task.finished'), 20_000, 'the resumed stream to catch up');
    const all = (await a.controller!.get(DataSource).query(`SELECT id FROM "controller"."events" WHERE task_guid = $1 ORDER BY id`, [guid])) as { id: string }[];
    const received = [before.id, ...resumed.of(guid).map((event) => event.id)];
    expect(received).toEqual(all.map((row) => Number(row.id)));
  });

  it('announces dispatcher state changes, and resumes from a query parameter too', async () => {
    await checkInDispatcher(a, { name: 'events-probe', endpoint_url: 'http://127.0.0.1:9', heartbeat_interval_seconds: 1 });
    const stream = await streamOnB('?last_event_id=0');
    const states = () => stream.events.filter((event) => event.event === 'dispatcher.state' && event.data.dispatcher_slug === 'events-probe');
    await waitFor(() => states().some((event) => event.data.status === 'stale'), 30_000, 'the silent dispatcher to turn stale');
    expect(states()[0].data.status).toBe('online');
  });

  it('keeps a bounded window: the retention sweep prunes events past EVENT_RETENTION_HOURS', async () => {
    const db = a.controller!.get(DataSource);
    const guid = (await createTask(a, { brief: { prompt: 'old' } })).body.guid as string;
    await db.query(`UPDATE "controller"."events" SET created_at = now() - interval '25 hours' WHERE task_guid = $1`, [guid]);
    const removed = await a.controller!.get(ControllerRetention).sweepAll();
    expect(removed.get('events')).toBeGreaterThanOrEqual(1);
    const [left] = await db.query(`SELECT count(*)::int AS n FROM "controller"."events" WHERE task_guid = $1 AND created_at < now() - interval '24 hours'`, [guid]);
    expect(left.n).toBe(0);
  });

  it('answers 401 without a credential and 400 for a Last-Event-ID that is not an id', async () => {
    expect((await http('GET', `${bUrl}/api/v1/events/`)).status).toBe(401);
    const bad = await http('GET', `${bUrl}/api/v1/events/`, { headers: { ...operator(a), 'Last-Event-ID': 'yesterday' } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid');
  });
});
