#!/usr/bin/env node
// Stream abuse: BENCH_STREAM_CLIENTS (1000) event-stream clients and BENCH_STREAM_FOLLOWERS (100)
// log followers against one replica while 100 events/s are written, interleaved with the
// baseline, the same run with 10 clients and 1 follower (baseline, abuse, baseline, ...:
// BENCH_STREAM_ROUNDS, 2, abuse runs). Reports the server's database transactions/s and
// event-log reads/s, its peak RSS and the event latency the clients see, each run and as
// median and spread. The server runs as in production: ROLE=all at LOG_LEVEL=info with its
// access log, objects in s3rver, Redis, its dispatcher online and consuming (the followed
// task's agent, scripts/bench-ticker-agent.sh, checks in and prints a line every 100 ms). A stream or request answered other than 200/201
// fails the run. Needs `npm run build`, local PostgreSQL and Redis. BENCH_STREAM_SECONDS sets
// the measured window (15). The window starts once every stream has answered; a stream the
// server cuts (STREAM_BUFFER_BYTES) reconnects with Last-Event-ID and is counted, beside the
// server's own count (controller_event_streams_cut_total). Also printed: the load average at
// the window's start and the CPU share of this process, whose clients must keep up.
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { loadavg } from 'node:os';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { allInOneConsumer, bootAllInOne, database, emitFigure, interleaved, median, percentile, premises, productionServices, rssSampler, runBenchScript, secret, spread } from './bench-lib.mjs';

/** Streams that failed (refused, reset, a status other than 200): each fails the run. */
const failures = [];
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 15);
const EVENTS_PER_SECOND = 100;
const CLIENTS = Number(process.env.BENCH_STREAM_CLIENTS ?? 1000);
const FOLLOWERS = Number(process.env.BENCH_STREAM_FOLLOWERS ?? 100);
const ROUNDS = Number(process.env.BENCH_STREAM_ROUNDS ?? 2);
// An agent that checks in and prints a line every 100 ms until it is stopped.
const TICKER = 'sh scripts/bench-ticker-agent.sh';

function countBy(values) {
  const counts = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

async function statsOf(db) {
  const [xacts] = (await db.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()')).rows;
  const [scans] = (await db.query(`SELECT COALESCE(idx_scan, 0) + COALESCE(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE schemaname = 'controller' AND relname = 'events'`)).rows;
  return { transactions: Number(xacts.n), eventReads: Number(scans.n) };
}

/**
 * An SSE client that records, for each bench event, how long after its writing it arrived.
 * Plain node:http and a string scan (no fetch, no per-frame parse): a thousand of them
 * share the benchmark's one process, which must not be the slow reader it measures. A
 * stream the server cuts (its ": cut:" line) reconnects with Last-Event-ID, as a client
 * should, and is counted.
 */
function openStream(url, headers, latencies, counts) {
  let request;
  let closed = false;
  let lastId;
  let finish;
  let opened;
  const open = new Promise((resolve) => (opened = resolve));
  const done = new Promise((resolve) => {
    finish = resolve;
    const connect = () => {
      const sent = { ...headers, accept: 'text/event-stream', ...(lastId === undefined ? {} : { 'last-event-id': String(lastId) }) };
      request = http.get(url, { headers: sent }, (response) => {
        opened();
        if (response.statusCode !== 200) {
          failures.push(`event stream answered ${response.statusCode}`);
          response.resume();
          return resolve();
        }
        let carry = '';
        let cut = false;
        response.setEncoding('latin1');
        response.on('data', (piece) => {
          const now = Date.now();
          const text = carry + piece;
          const end = text.lastIndexOf('\n\n');
          if (end < 0) return void (carry = text);
          carry = text.slice(end + 2);
          for (let at = text.indexOf('"sent_at":'); at >= 0 && at < end; at = text.indexOf('"sent_at":', at + 10)) latencies.push(now - parseInt(text.slice(at + 10, at + 30), 10));
          const idAt = text.lastIndexOf('id: ', end);
          if (idAt >= 0 && (idAt === 0 || text[idAt - 1] === '\n')) lastId = parseInt(text.slice(idAt + 4, idAt + 24), 10);
          if (text.includes(': cut:')) cut = true;
        });
        response.on('end', () => {
          if (closed) return resolve();
          if (!cut) {
            failures.push('event stream ended');
            return resolve();
          }
          counts.cuts += 1;
          connect();
        });
        // A socket closed without the response's end: the server cut it and closed it after its grace.
        response.on('close', () => {
          if (closed || response.complete) return;
          if (cut) counts.cuts += 1;
          else failures.push('event stream reset');
          if (cut) connect();
          else resolve();
        });
        response.on('error', () => undefined);
      });
      request.on('error', (error) => {
        if (!closed) failures.push(error.code ?? error.message);
        opened();
        resolve();
      });
    };
    connect();
  });
  return { close: () => ((closed = true), request.destroy(), finish()), done, open };
}

function openFollow(url, headers, counter) {
  let request;
  let closed = false;
  let finish;
  let opened;
  const open = new Promise((resolve) => (opened = resolve));
  const done = new Promise((resolve) => {
    finish = resolve;
    request = http.get(url, { headers }, (response) => {
      opened();
      if (response.statusCode !== 200) failures.push(`log follow answered ${response.statusCode}`);
      response.on('data', (chunk) => (counter.bytes += chunk.length));
      response.on('end', () => {
        if (!closed) failures.push('log follow ended');
        resolve();
      });
      response.on('error', () => undefined);
    });
    request.on('error', (error) => {
      if (!closed) failures.push(error.code ?? error.message);
      opened();
      resolve();
    });
  });
  return { close: () => ((closed = true), request.destroy(), finish()), done, open };
}

async function run(clients, followers, services) {
  failures.length = 0;
  const db = await database();
  if (!db.url) throw new Error('bench-streams needs PostgreSQL on 127.0.0.1:5432 (or BENCH_DATABASE_URL)');
  const server = await bootAllInOne({
    services, databaseUrl: db.url, dataDir: mkdtempSync(path.join(tmpdir(), 'bench-streams-')), imageCommands: { 'bench/ticker': TICKER },
    env: { SECRET_KEY: secret(), STREAMS_PER_PRINCIPAL: '5000', STREAMS_PER_REPLICA: '5000', HEARTBEAT_INTERVAL_SECONDS: '1' },
  });
  const base = `${server.controller}/api/v1`;
  const auth = { authorization: `Token ${server.token}` };
  const writer = new pg.Client({ connectionString: db.url });
  await writer.connect();
  try {
    const answer = await fetch(`${base}/tasks/`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_image: 'bench/ticker', runtime_target: { type: 'local' }, brief: {}, timeout_seconds: 600 }),
    });
    const created = await answer.json();
    if (answer.status !== 201) throw new Error(`task creation answered ${answer.status}: ${JSON.stringify(created)}`);
    for (let i = 0; ; i++) {
      const task = await (await fetch(`${base}/tasks/${created.guid}/`, { headers: auth })).json();
      if (task.status === 'running') break;
      if (i >= 100) throw new Error(`the followed task is ${task.status}, not running, after 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const latencies = [];
    const counts = { cuts: 0 };
    const followed = { bytes: 0 };
    const streams = [];
    for (let i = 0; i < clients; i++) streams.push(openStream(`${base}/events/`, auth, latencies, counts));
    for (let i = 0; i < followers; i++) streams.push(openFollow(`${base}/tasks/${created.guid}/logs/?follow=true`, auth, followed));
    // Every stream answered before the window: an event written before a stream opened is not one it should see.
    const openedAt = Date.now();
    await Promise.all(streams.map((stream) => stream.open));
    const openSeconds = (Date.now() - openedAt) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const rss = rssSampler(server.child.pid);
    const before = await statsOf(writer);
    const load = loadavg()[0];
    const clientCpu = process.cpuUsage();
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
    const clientCpuUsed = process.cpuUsage(clientCpu);
    const clientCpuShare = (clientCpuUsed.user + clientCpuUsed.system) / 1000 / (Date.now() - started);
    // PostgreSQL publishes a backend's counts within about ten seconds of its last statement.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const after = await statsOf(writer);
    const peak = rss.stop();
    const serverCuts = /^controller_event_streams_cut_total (\d+)/m.exec(await (await fetch(`${server.controller}/metrics`)).text())?.[1];
    for (const stream of streams) stream.close();
    await Promise.allSettled(streams.map((stream) => stream.done));
    const window = (Date.now() - started) / 1000;
    return {
      clients, followers, events: written,
      transactionsPerSecond: (after.transactions - before.transactions - written) / window,
      eventReadsPerSecond: (after.eventReads - before.eventReads) / window,
      peakRssMiB: peak,
      latencyP50Ms: percentile(latencies, 50), latencyP99Ms: percentile(latencies, 99),
      delivered: latencies.length, expected: written * clients, cuts: counts.cuts, serverCuts: Number(serverCuts ?? NaN), openSeconds, load, clientCpuShare, followedBytes: followed.bytes, failures: failures.length, failureReasons: countBy(failures),
    };
  } finally {
    await writer.end();
    await server.stop();
    await db.drop();
  }
}

async function main() {
  const services = await productionServices();
  try {
    premises(services.statement, 'PostgreSQL (local, a fresh database per run)', `consumer: ${allInOneConsumer()}`);
    const { runs, baselines, ratios } = await interleaved(ROUNDS, () => run(10, 1, services), () => run(CLIENTS, FOLLOWERS, services));
    console.log(`stream abuse: ${EVENTS_PER_SECOND} events/s for ${SECONDS} s against one replica (all role); ${ROUNDS} runs of ${CLIENTS} streams, each between two baseline runs of 10`);
    console.log(['clients', 'followers', 'server db transactions/s', 'event log reads/s', 'peak RSS MiB', 'latency p50 ms', 'latency p99 ms', 'events delivered/expected', 'cut (reconnected) / counted by the server', 'failed streams', 'load average', 'bench client CPU', 'all streams open after s'].join(' | '));
    const fmt = (n) => (typeof n === 'number' && !Number.isInteger(n) ? n.toFixed(1) : String(n));
    for (const r of [...baselines, ...runs]) {
      console.log([r.clients, r.followers, fmt(r.transactionsPerSecond), fmt(r.eventReadsPerSecond), fmt(r.peakRssMiB), r.latencyP50Ms, r.latencyP99Ms, `${r.delivered}/${r.expected}`, `${r.cuts}/${r.serverCuts}`, r.failures, r.load.toFixed(1), `${Math.round(r.clientCpuShare * 100)}%`, r.openSeconds.toFixed(1)].join(' | '));
    }
    const one = (value) => value.toFixed(1);
    for (const [name, list] of [['baseline, 10 streams', baselines], [`${CLIENTS} streams`, runs]]) {
      console.log(`${name}: event log reads/s ${spread(list.map((r) => r.eventReadsPerSecond), one)}; db transactions/s ${spread(list.map((r) => r.transactionsPerSecond), one)}; latency p50 ${spread(list.map((r) => r.latencyP50Ms))} ms; latency p99 ${spread(list.map((r) => r.latencyP99Ms))} ms; peak RSS ${spread(list.map((r) => r.peakRssMiB), one)} MiB; events delivered ${spread(list.map((r) => (100 * r.delivered) / r.expected), one)}%`);
    }
    // Reads per second of the event log beside the 10-stream runs: the shared range read keeps it near 1x.
    const readRatios = ratios((r) => Math.max(r.eventReadsPerSecond, 0.1));
    console.log(`${CLIENTS} streams' event log reads/s over the 10-stream runs beside them: ${spread(readRatios, (v) => `${v.toFixed(1)}x`)}`);
    for (const r of [...baselines, ...runs].filter((run) => run.failures > 0)) console.log(`failed streams of a run of ${r.clients}, by reason: ${JSON.stringify(r.failureReasons)}`);
    const failed = [...runs, ...baselines].reduce((sum, r) => sum + r.failures, 0);
    if (failed > 0) {
      console.log(`   FAILED: ${failed} streams failed (refused, reset or answered other than 200)`);
      process.exitCode = 1;
    }
    emitFigure({
      figure: `event log reads/s with ${CLIENTS} streams + ${FOLLOWERS} follows`, value: `${one(median(runs.map((r) => r.eventReadsPerSecond)))}/s`,
      baseline: `${one(median(baselines.map((r) => r.eventReadsPerSecond)))}/s with 10`, ratio: `${median(readRatios).toFixed(1)}x`,
      target: 'none (shown: stays near 1x); no failed stream', met: failed === 0,
    });
  } finally {
    await services.stop();
  }
}

runBenchScript(main);
