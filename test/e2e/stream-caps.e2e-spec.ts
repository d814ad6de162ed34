import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import { createTask, operator } from '../harness/controller-tasks';
import { openEventStream } from '../harness/events';
import { http } from '../harness/http';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(90_000);

async function clientWithToken(system: TestSystem): Promise<{ clientId: string; headers: Record<string, string> }> {
  const client = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, { headers: operator(system), json: { name: 'watcher', scopes: ['tasks:read'] } });
  const token = await http('POST', `${system.controllerUrl}/api/v1/oauth/token/`, {
    json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
  });
  return { clientId: client.body.client_id, headers: { authorization: `Bearer ${token.body.access_token}` } };
}

/** Index and sequential scans of the event log so far, as PostgreSQL counts them. */
async function eventScans(system: TestSystem): Promise<number> {
  const db = new Client({ connectionString: system.config.databaseUrl! });
  await db.connect();
  try {
    const rows = await db.query(`SELECT COALESCE(idx_scan, 0) + COALESCE(seq_scan, 0) AS scans FROM pg_stat_user_tables WHERE schemaname = 'controller' AND relname = 'events'`);
    return Number(rows.rows[0].scans);
  } finally {
    await db.end();
  }
}

describe('event streams and log follows that cannot be abused', () => {
  let system: TestSystem;
  const eventsUrl = () => `${system.controllerUrl}/api/v1/events/`;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { STREAMS_PER_PRINCIPAL: '3', STREAMS_PER_REPLICA: '5' } });
  });
  afterAll(() => system?.close());

  it('answers 429 with Retry-After beyond the per-principal and the per-replica cap, and frees a slot when a stream closes', async () => {
    const mine = await Promise.all([1, 2, 3].map(() => openEventStream(eventsUrl(), operator(system))));
    expect(mine.map((stream) => stream.response.status)).toEqual([200, 200, 200]);
    const fourth = await http('GET', eventsUrl(), { headers: operator(system) });
    expect(fourth.status).toBe(429);
    expect(fourth.headers.get('retry-after')).toBe('10');
    expect(fourth.body).toMatchObject({ code: 'throttled', detail: expect.stringContaining('STREAMS_PER_PRINCIPAL') });
    const follow = await http('GET', `${system.controllerUrl}/api/v1/tasks/6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11/logs/?follow=true`, { headers: operator(system) });
    expect(follow.status).toBe(429);

    const other = await clientWithToken(system);
    const theirs = await Promise.all([1, 2].map(() => openEventStream(eventsUrl(), other.headers)));
    expect(theirs.map((stream) => stream.response.status)).toEqual([200, 200]);
    const full = await http('GET', eventsUrl(), { headers: (await clientWithToken(system)).headers });
    expect(full.status).toBe(429);
    expect(full.body.detail).toContain('STREAMS_PER_REPLICA');

    await mine[0].close();
    const again = await waitFor(async () => {
      const stream = await openEventStream(eventsUrl(), operator(system));
      if (stream.response.status === 200) return stream;
      await stream.close();
      return null;
    }, 5000, 'a freed slot');
    for (const stream of [...mine.slice(1), ...theirs, again]) await stream.close();
  });

  it('ends a stream once its OAuth client is deleted', async () => {
    const watcher = await clientWithToken(system);
    const response = await fetch(eventsUrl(), { headers: watcher.headers });
    expect(response.status).toBe(200);
    expect((await http('DELETE', `${system.controllerUrl}/api/v1/oauth/clients/${watcher.clientId}/`, { headers: operator(system) })).status).toBe(204);
    let ended = false;
    const reading = (async () => {
      for await (const chunk of response.body!) void chunk;
      ended = true;
    })().catch(() => (ended = true));
    await waitFor(async () => {
      await createTask(system);
      return ended;
    }, 30_000, 'the stream to end', 1000);
    await reading;
  });
});

describe('one range read per advance, shared by every stream of a replica', () => {
  it('reads the event log a few times for 100 streams, not once per stream', async () => {
    const system = await startTestSystem({ role: 'controller', env: { STREAMS_PER_PRINCIPAL: '200' } });
    try {
      const streams = await Promise.all(Array.from({ length: 100 }, () => openEventStream(`${system.controllerUrl}/api/v1/events/`, operator(system))));
      // PostgreSQL publishes a backend's counts within about ten seconds of its last statement.
      await delay(11_000);
      const before = await eventScans(system);
      const created = await createTask(system);
      await waitFor(() => streams.every((stream) => stream.of(created.body.guid).length > 0), 20_000, 'every stream to see the task');
      await delay(11_000);
      const scans = (await eventScans(system)) - before;
      process.stdout.write(`event log scans for 100 streams and one event: ${scans}\n`);
      // The feed polls once a second (about 22 in this window); the streams add a read per advance, not one each.
      expect(scans).toBeLessThan(60);
      for (const stream of streams) await stream.close();
    } finally {
      await system.close();
    }
  });
});
