#!/usr/bin/env node
// Stream abuse: N event-stream clients and F log followers against one replica (the `all`
// role) while 100 events/s are written, beside the same run with 10 clients. Reports the
// server's database transactions/s and event-log reads/s, its peak RSS and the event latency
// the clients see. Needs `npm run build`. BENCH_STREAM_SECONDS sets the measured window (15).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { bootServer, database, freePort, percentile, rssSampler, secret } from './bench-lib.mjs';

/** Streams that failed (refused, reset): reported, never fatal. */
const failures = [];
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 15);
const EVENTS_PER_SECOND = 100;
// An agent that prints a line every 100 ms until it is stopped (no spaces: the command line is split on them).
const TICKER = 'node -e setInterval(()=>console.log(Date.now()),100)';

async function statsOf(db) {
  const [xacts] = (await db.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()')).rows;
  const [scans] = (await db.query(`SELECT COALESCE(idx_scan, 0) + COALESCE(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE schemaname = 'controller' AND relname = 'events'`)).rows;
  return { transactions: Number(xacts.n), eventReads: Number(scans.n) };
}

/** An SSE client that records, for each bench event, how long after its writing it arrived. */
function openStream(url, headers, latencies) {
  const controller = new AbortController();
  const done = fetch(url, { headers, signal: controller.signal }).then(async (response) => {
    if (response.status !== 200) throw new Error(`event stream answered ${response.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const sent = /"sent_at":(\d+)/.exec(frame);
        if (sent) latencies.push(Date.now() - Number(sent[1]));
      }
    }
  }).catch((error) => {
    if (error.name !== 'AbortError') failures.push(error.cause?.code ?? error.message);
  });
  return { close: () => controller.abort(), done };
}

function openFollow(url, headers, counter) {
  const controller = new AbortController();
  const done = fetch(url, { headers, signal: controller.signal }).then(async (response) => {
    if (response.status !== 200) throw new Error(`log follow answered ${response.status}`);
    for await (const chunk of response.body) counter.bytes += chunk.length;
  }).catch((error) => {
    if (error.name !== 'AbortError') failures.push(error.cause?.code ?? error.message);
  });
  return { close: () => controller.abort(), done };
}

async function run(clients, followers) {
  failures.length = 0;
  const db = await database();
  if (!db.url) throw new Error('bench-streams needs PostgreSQL on 127.0.0.1:5432 (or BENCH_DATABASE_URL)');
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const token = secret();
  const server = await bootServer({
    ROLE: 'all', NODE_ENV: 'test', DATABASE_URL: db.url, DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-streams-')),
    CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort),
    API_TOKEN: token, SECRET_KEY: secret(), CALLBACK_SIGNING_KEY: secret(), DISPATCHER_API_KEY: secret(), API_KEY: secret(), AGENT_KEY: secret(),
    STREAMS_PER_PRINCIPAL: '5000', STREAMS_PER_REPLICA: '5000', HEARTBEAT_INTERVAL_SECONDS: '1',
    LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'bench/ticker': TICKER }),
  }, `http://127.0.0.1:${dispatcherPort}/health`);
  const base = `http://127.0.0.1:${controllerPort}/api/v1`;
  const auth = { authorization: `Token ${token}` };
  const writer = new pg.Client({ connectionString: db.url });
  await writer.connect();
  try {
    const created = await (await fetch(`${base}/tasks/`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_image: 'bench/ticker', runtime_target: { type: 'local' }, brief: {}, timeout_seconds: 600 }),
    })).json();
    for (let i = 0; i < 100; i++) {
      const task = await (await fetch(`${base}/tasks/${created.guid}/`, { headers: auth })).json();
      if (task.status === 'running') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const latencies = [];
    const followed = { bytes: 0 };
    const streams = [];
    for (let i = 0; i < clients; i++) streams.push(openStream(`${base}/events/`, auth, latencies));
    for (let i = 0; i < followers; i++) streams.push(openFollow(`${base}/tasks/${created.guid}/logs/?follow=true`, auth, followed));
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const rss = rssSampler(server.child.pid);
    const before = await statsOf(writer);
    let written = 0;
    const started = Date.now();
    while (Date.now() - started < SECONDS * 1000) {
      const due = Math.floor(((Date.now() - started) / 1000) * EVENTS_PER_SECOND);
      for (; written < due; written++) {
        await writer.query(
          `WITH e AS (INSERT INTO controller.events (kind, task_guid, data) VALUES ('task.progress', $1::uuid,
             jsonb_build_object('task_guid', $1::text, 'status', 'running', 'sent_at', $2::bigint)) RETURNING id)
           SELECT pg_notify('controller_events', 'bench') FROM e`,
          [created.guid, Date.now()],
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // PostgreSQL publishes a backend's counts within about ten seconds of its last statement.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const after = await statsOf(writer);
    const peak = rss.stop();
    for (const stream of streams) stream.close();
    await Promise.allSettled(streams.map((stream) => stream.done));
    const window = (Date.now() - started) / 1000;
    return {
      clients, followers, events: written,
      transactionsPerSecond: (after.transactions - before.transactions - written) / window,
      eventReadsPerSecond: (after.eventReads - before.eventReads) / window,
      peakRssMiB: peak,
      latencyP50Ms: percentile(latencies, 50), latencyP99Ms: percentile(latencies, 99),
      delivered: latencies.length, expected: written * clients, followedBytes: followed.bytes, failures: failures.length,
    };
  } finally {
    await writer.end();
    await server.stop();
    await db.drop();
  }
}

const fmt = (n) => (typeof n === 'number' && !Number.isInteger(n) ? n.toFixed(1) : String(n));
const results = [await run(10, 1), await run(1000, 100)];
console.log(`stream abuse: ${EVENTS_PER_SECOND} events/s for ${SECONDS} s against one replica (all role)`);
console.log(['clients', 'followers', 'server db transactions/s', 'event log reads/s', 'peak RSS MiB', 'latency p50 ms', 'latency p99 ms', 'events delivered/expected', 'failed streams']
  .join(' | '));
for (const r of results) {
  console.log([r.clients, r.followers, fmt(r.transactionsPerSecond), fmt(r.eventReadsPerSecond), fmt(r.peakRssMiB), r.latencyP50Ms, r.latencyP99Ms, `${r.delivered}/${r.expected}`, r.failures].join(' | '));
}
