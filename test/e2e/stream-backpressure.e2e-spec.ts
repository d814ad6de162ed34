import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { Client } from 'pg';
import { operator } from '../harness/controller-tasks';
import { scrape } from '../harness/metrics';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(120_000);

const BUFFER_BYTES = 65_536;
const BATCHES = 20;
const PER_BATCH = 30;
/** Progress data near the 16 KiB the floor allows: 20 batches of 30 events are about 9 MB per stream. */
const PAD = 'x'.repeat(15_000);

/** A reader that takes every byte at once and notes, per event, its id and how long after its writing it came. */
function fastReader(url: string, headers: Record<string, string>) {
  const seen: { id: number; lateMs: number }[] = [];
  let text = '';
  const request = http.get(url, { headers }, (response) => {
    response.setEncoding('utf8');
    response.on('data', (piece: string) => {
      text += piece;
      const end = text.lastIndexOf('\n\n');
      if (end < 0) return;
      for (const match of text.slice(0, end).matchAll(/(?:^|\n)id: (\d+)\n[^]*?"sent_at":(\d+)/g)) seen.push({ id: Number(match[1]), lateMs: Date.now() - Number(match[2]) });
      text = text.slice(end + 2);
    });
  });
  request.on('error', () => undefined);
  return { seen, close: () => request.destroy() };
}

/** A client that sends its request, takes the first bytes and then reads nothing: its socket fills, then the server's buffer. */
async function stalledReader(url: URL, authorization: string) {
  const socket = net.connect(Number(url.port), url.hostname);
  let raw = '';
  socket.setEncoding('utf8');
  socket.on('data', (piece: string) => (raw += piece));
  socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${authorization}\r\nAccept: text/event-stream\r\n\r\n`);
  await waitFor(() => raw.includes('retry: 2000'), 10_000, 'the stalled stream to open');
  socket.pause();
  // The response's last chunk (the connection itself may stay open for the next request).
  const ended = () => waitFor(() => raw.endsWith('\r\n0\r\n\r\n'), 20_000, 'the stalled stream to end');
  return { text: () => raw, resume: () => socket.resume(), ended, close: () => socket.destroy() };
}

async function writeBatch(db: Client, taskGuid: string): Promise<void> {
  await db.query(
    `WITH e AS (INSERT INTO controller.events (kind, task_guid, data)
       SELECT 'task.progress', $1::uuid, jsonb_build_object('task_guid', $1::text, 'status', 'running', 'sent_at', $2::bigint, 'pad', $3::text)
       FROM generate_series(1, ${PER_BATCH}) RETURNING id)
     SELECT pg_notify('controller_events', 'spec') FROM e LIMIT 1`,
    [taskGuid, Date.now(), PAD],
  );
}

describe('a stream whose client does not read', () => {
  let system: TestSystem;
  let db: Client;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { STREAM_BUFFER_BYTES: String(BUFFER_BYTES) } });
    db = new Client({ connectionString: system.config.databaseUrl! });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await system?.close();
  });

  it('is cut once its unsent bytes pass STREAM_BUFFER_BYTES, while a reader that keeps up gets every event on time', async () => {
    const url = `${system.controllerUrl}/api/v1/events/`;
    const fast = fastReader(url, operator(system));
    const stalled = await stalledReader(new URL(url), operator(system).authorization);
    const taskGuid = randomUUID();
    for (let batch = 0; batch < BATCHES; batch++) {
      await writeBatch(db, taskGuid);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const total = BATCHES * PER_BATCH;
    await waitFor(() => fast.seen.length >= total, 20_000, 'the fast reader to get every event');
    const ids = fast.seen.map((event) => event.id);
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => ids[0] + i));
    const latest = Math.max(...fast.seen.map((event) => event.lateMs));
    process.stdout.write(`slowest event to the reader that keeps up: ${latest} ms\n`);
    expect(latest).toBeLessThan(3000);

    const metrics = await scrape(system.controllerUrl);
    expect(metrics.value('controller_event_streams_cut_total')).toBe(1);
    stalled.resume();
    await stalled.ended();
    const stalledText = stalled.text();
    expect(stalledText).toMatch(/: cut: \d+ bytes waited unsent for this client \(STREAM_BUFFER_BYTES 65536\); reconnect with Last-Event-ID/);
    const stalledIds = [...stalledText.matchAll(/\nid: (\d+)\n/g)].map((match) => Number(match[1]));
    expect(stalledIds.length).toBeGreaterThan(0);
    expect(stalledIds.length).toBeLessThan(total);

    // It resumes where it was cut and gets the rest, paged, from the event log.
    const resumed = fastReader(url, { ...operator(system), 'last-event-id': String(stalledIds.at(-1)) });
    await waitFor(() => resumed.seen.length >= total - stalledIds.length, 20_000, 'the resumed stream to catch up');
    expect([...stalledIds, ...resumed.seen.map((event) => event.id)]).toEqual(ids);
    fast.close();
    resumed.close();
    stalled.close();
  });
});
