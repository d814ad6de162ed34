#!/usr/bin/env node
// The task pipeline on real PostgreSQL. Each section runs BENCH_PIPELINE_ROUNDS times
// (BENCH_ROUNDS, else 3), each run on a fresh database with a freshly booted server, and each
// run sits between two runs of its baseline: baseline, run, baseline, ..., baseline. A run's
// ratio is over the mean of the two baseline runs beside it, so a machine that drifts moves
// both; every figure prints its median and spread (min, max, n).
//  A. task creations at the controller: concurrent clients POST /api/v1/tasks/ to the
//     all-in-one server with its dispatcher online and consuming (process engine, the shell
//     agent below), so each task is stored, dispatched, its brief written to S3 and its agent
//     run while the creations go on, as in production;
//  B. A's baseline: a bare node:http server with a pg pool (in a child process) that parses
//     the JSON body, checks the token in constant time and INSERTs one row per request;
//  C. POST to agent check-in: the all-in-one server runs each task's minimal agent
//     (scripts/bench-agent.sh, or .mjs with BENCH_PIPELINE_AGENT=node) as a local process,
//     the POSTs sent at a steady rate; tasks closed per second (first POST to last task final),
//     the time from each POST to the agent's check-in being answered and to the task being
//     closed at the controller, and every task must end `completed`. Its baseline (the floor):
//     the same agent spawned bare at the same rate, checking in and back at a server that
//     answers at once, its check-in's moment taken as C's is (the agent's report);
//  D. the servers' peak RSS.
// Marked for `npm run bench`'s closing table, with issue 23's targets: A's creations/s (at
// least 300/s, p50 under 30 ms), C's tasks/s (at least 60% of the floor's) and C's POST to
// check-in p50 (at most 1.5x the floor's spawn to check-in). Any unexpected answer, a task not
// `completed` or a bare agent that fails makes the exit code 1.
// The servers run as in production: LOG_LEVEL=info with the access log, s3rver, Redis.
// Needs local PostgreSQL (127.0.0.1:5432, user postgres) and Redis; `npm run build` first.
//
//   BENCH_PIPELINE_CREATES=2000 BENCH_PIPELINE_CLIENTS=16 BENCH_PIPELINE_TASKS=200 BENCH_PIPELINE_ROUNDS=3
//   BENCH_PIPELINE_TASK_RATE=10 BENCH_PIPELINE_MAX_CONCURRENT=32 BENCH_PIPELINE_WAIT_SECONDS=300
import { spawn } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  allInOneConsumer, BENCH_AGENT_IMAGE, bootAllInOne, checkinReports, countStatus, database, emitFigure, forkBaseline, interleaved, median, medianOf, mergeStatuses,
  percentile, premises, productionServices, requireStatuses, root, rssSampler, runBenchScript, secret, spread, tally,
} from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const creates = env('BENCH_PIPELINE_CREATES', 2000);
const clients = env('BENCH_PIPELINE_CLIENTS', 16);
const taskCount = env('BENCH_PIPELINE_TASKS', 200);
const rounds = env('BENCH_PIPELINE_ROUNDS', process.env.BENCH_ROUNDS ?? 3);
/** Section C sends its POSTs at this steady rate (open loop), so latency is not agents queueing for two cores. */
const taskRate = env('BENCH_PIPELINE_TASK_RATE', 10);
/** `sh` (default): scripts/bench-agent.sh, a shell and curl; `node`: scripts/bench-agent.mjs, a Node process per task. */
const agentKind = process.env.BENCH_PIPELINE_AGENT ?? 'sh';
const AGENT_COMMAND = agentKind === 'node' ? ['node', 'scripts/bench-agent.mjs'] : ['sh', 'scripts/bench-agent.sh'];
const maxConcurrent = env('BENCH_PIPELINE_MAX_CONCURRENT', 32);
const waitSeconds = env('BENCH_PIPELINE_WAIT_SECONDS', 300);
const warmup = Math.min(100, Math.ceil(creates / 20));
/** The server's DATABASE_POOL_SIZE default (src/shared/config/config.ts); the baseline's pool matches it. */
const SERVER_POOL_SIZE = 10;
const FINAL = ['completed', 'failed', 'timed_out', 'cancelled'];
const REQUEST_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------- HTTP client

/** One keep-alive connection pool per server, so a section's sockets are its own. */
function client() {
  const agent = new http.Agent({ keepAlive: true });
  const request = (url, { method = 'GET', headers = {}, body } = {}) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const bodyHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      const req = http.request(
        { hostname: target.hostname, port: target.port, path: target.pathname + target.search, method, headers: { ...bodyHeaders, ...headers }, agent },
        (res) => {
          const chunks = [];
          res.on('data', (chunk) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${url}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
      req.on('error', reject);
      req.end(body);
    });
  /** A GET retried a few times on connection errors (a keep-alive socket closed by the server meanwhile). */
  const getJson = async (url, headers) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await request(url, { headers });
        return { status: answer.status, body: answer.text ? JSON.parse(answer.text) : null };
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
  };
  return { request, getJson, close: () => agent.destroy() };
}

/**
 * `count` POSTs from `width` clients, each sending its next request when the previous one is
 * answered. Returns throughput, latency percentiles and the answers' status codes.
 */
async function load(http_, { url, headers, count, width, body, onAnswer }) {
  const latencies = [];
  const statuses = new Map();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const index = next++;
        const payload = body(index);
        const sentAt = Date.now();
        const t0 = performance.now();
        let answer;
        try {
          answer = await http_.request(url, { method: 'POST', headers, body: payload });
        } catch (error) {
          answer = { status: 'error', text: error.message };
        }
        latencies.push(performance.now() - t0);
        countStatus(statuses, answer.status);
        onAnswer?.(index, answer, sentAt);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds, rate: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}

/** POSTs sent at `rate` per second on a fixed schedule, whatever the answers take (open loop). */
async function paced(http_, { url, headers, count, rate, body, onAnswer }) {
  const latencies = [];
  const statuses = new Map();
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, index) => {
    await sleep(Math.max(0, started + (index * 1000) / rate - performance.now()));
    const sentAt = Date.now();
    const t0 = performance.now();
    const answer = await http_.request(url, { method: 'POST', headers, body: body(index) }).catch((error) => ({ status: 'error', text: error.message }));
    latencies.push(performance.now() - t0);
    countStatus(statuses, answer.status);
    onAnswer?.(index, answer, sentAt);
  }));
  const seconds = (performance.now() - started) / 1000;
  return { seconds, rate: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}

/**
 * The floor under section C (one run): the same agent spawned bare, at the same pace, checking
 * in and back at a server that answers at once and stores nothing. Spawns per second (first
 * spawn to last exit), spawn to check-in answered p50 and p99, the agents' exit codes. The
 * check-in's moment is the one C takes: the agent's own report once its check-in was answered
 * (not the server's receipt, which is earlier by the answer's way back and the report's clock).
 */
async function bareSpawnFloor(count) {
  const checkins = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/report') {
        const { task_id: taskId, t } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        checkins.set(taskId, t);
        return res.writeHead(204).end();
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  const spawnedAt = new Map();
  const exits = new Map();
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, index) => {
    await sleep(Math.max(0, started + (index * 1000) / taskRate - performance.now()));
    const taskId = `bare-${index}`;
    spawnedAt.set(taskId, Date.now());
    const child = spawn(AGENT_COMMAND[0], AGENT_COMMAND.slice(1), {
      cwd: root,
      env: { PATH: process.env.PATH, TASK_ID: taskId, DISPATCHER_URL: `http://127.0.0.1:${port}`, AGENT_KEY: 'k', BENCH_REPORT_URL: `http://127.0.0.1:${port}/report` },
      stdio: 'ignore',
    });
    countStatus(exits, await new Promise((resolve) => child.once('exit', resolve)));
  }));
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => server.close(resolve));
  const waits = [...spawnedAt].filter(([id]) => checkins.has(id)).map(([id, at]) => checkins.get(id) - at);
  console.log(`   floor run: ${(count / seconds).toFixed(2)} spawns/s; spawn -> check-in p50 ${ms(percentile(waits, 50))}, p99 ${ms(percentile(waits, 99))} (${waits.length}/${count} checked in); exit codes: ${tally(exits)}`);
  return { rate: count / seconds, checkinP50: percentile(waits, 50), checkinP99: percentile(waits, 99), exits, checkedIn: new Map([['checked in', waits.length], ['no check-in', count - waits.length]].filter(([, n]) => n > 0)) };
}

const peaks = {};
const ms = (value) => (value === undefined ? 'n/a' : `${value.toFixed(1)} ms`);
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

function taskBody(index, extra = {}) {
  return JSON.stringify({
    agent_image: BENCH_AGENT_IMAGE,
    runtime_target: { type: 'local', namespace: '' },
    resources: { cpu: '100m', memory: '128Mi' },
    timeout_seconds: 300,
    brief: { bench: 'pipeline', n: index, prompt: 'Summarise the pull request and list the risky changes.' },
    ...extra,
  });
}

// ---------------------------------------------------------------- A. controller creations

/** One run of A on a fresh database: the all-in-one server booted, warmed up, loaded, stopped. */
async function benchCreations(db, dataDir, services) {
  const server = await bootAllInOne({ services, databaseUrl: db.url, dataDir, maxConcurrent, imageCommands: { [BENCH_AGENT_IMAGE]: AGENT_COMMAND.join(' ') } });
  const sampler = rssSampler(server.child.pid);
  const http_ = client();
  try {
    const headers = { authorization: `Token ${server.token}` };
    const url = `${server.controller}/api/v1/tasks/`;
    await load(http_, { url, headers, count: warmup, width: clients, body: (i) => taskBody(-1 - i) });
    const taskStatuses = new Map();
    const result = await load(http_, {
      url, headers, count: creates, width: clients, body: (i) => taskBody(i),
      onAnswer: (_index, answer) => {
        let status = 'unreadable';
        try {
          status = JSON.parse(answer.text).status ?? 'none';
        } catch {
          // counted as unreadable
        }
        if (answer.status === 201) countStatus(taskStatuses, status);
      },
    });
    console.log(`   A run: ${result.rate.toFixed(1)} creations/s, p50 ${ms(result.p50)}, p99 ${ms(result.p99)}; answers: ${tally(result.statuses)}; task status in the 201s: ${tally(taskStatuses) || 'none'}`);
    return { ...result, taskStatuses };
  } finally {
    http_.close();
    peaks.controller = Math.max(peaks.controller ?? 0, sampler.stop());
    await server.stop();
  }
}

// ---------------------------------------------------------------- B. baseline

/** The baseline server (the child process side). */
async function baselineServer() {
  const pool = new pg.Pool({ connectionString: process.env.BASELINE_DATABASE_URL, max: Number(process.env.BASELINE_POOL_SIZE) });
  // The database is dropped at the end with its connections: an idle client's error then is expected.
  pool.on('error', () => undefined);
  await pool.query('CREATE TABLE bench_requests (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  const expected = createHash('sha256').update(process.env.BASELINE_TOKEN).digest();
  const reply = (res, status, value) => {
    const text = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      if (req.method !== 'POST') return reply(res, 405, { detail: 'POST only.' });
      const credential = /^(?:Token|Bearer) (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!credential || !timingSafeEqual(createHash('sha256').update(credential).digest(), expected)) {
        return reply(res, 401, { detail: 'Invalid token.', code: 'authentication_failed' });
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(res, 400, { detail: 'The body is not JSON.', code: 'parse_error' });
      }
      try {
        const { rows } = await pool.query('INSERT INTO bench_requests (body) VALUES ($1) RETURNING id', [JSON.stringify(body)]);
        reply(res, 201, { id: rows[0].id });
      } catch (error) {
        reply(res, 503, { detail: error.message, code: 'unavailable' });
      }
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  const stop = () => server.close(() => void pool.end().finally(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
}

/** One run of B on a fresh database: the baseline server forked, warmed up, loaded, stopped. */
async function benchBaseline(db) {
  const token = secret();
  const baseline = await forkBaseline(fileURLToPath(import.meta.url), { BASELINE_DATABASE_URL: db.url, BASELINE_POOL_SIZE: String(SERVER_POOL_SIZE), BASELINE_TOKEN: token });
  const exited = new Promise((resolve) => (baseline.child.exitCode !== null ? resolve() : baseline.child.once('exit', resolve)));
  const sampler = rssSampler(baseline.child.pid);
  const http_ = client();
  try {
    const url = `${baseline.url}api/v1/tasks/`;
    const headers = { authorization: `Token ${token}` };
    await load(http_, { url, headers, count: warmup, width: clients, body: (i) => taskBody(-1 - i) });
    const result = await load(http_, { url, headers, count: creates, width: clients, body: (i) => taskBody(i) });
    console.log(`   B run: ${result.rate.toFixed(1)} requests/s, p50 ${ms(result.p50)}, p99 ${ms(result.p99)}; answers: ${tally(result.statuses)}`);
    return result;
  } finally {
    http_.close();
    peaks.baseline = Math.max(peaks.baseline ?? 0, sampler.stop());
    baseline.stop();
    await Promise.race([exited, sleep(5000).then(() => baseline.child.kill('SIGKILL'))]);
  }
}

// ---------------------------------------------------------------- C. POST to check-in

/** One run of C on a fresh database: the all-in-one server booted, taskCount tasks POSTed at taskRate, waited for, stopped. */
async function benchCheckins(db, dataDir, services) {
  const report = await checkinReports();
  let server;
  let sampler;
  const http_ = client();
  try {
    server = await bootAllInOne({ services, databaseUrl: db.url, dataDir, maxConcurrent, imageCommands: { [BENCH_AGENT_IMAGE]: AGENT_COMMAND.join(' ') } });
    sampler = rssSampler(server.child.pid);
    const { controller } = server;
    const headers = { authorization: `Token ${server.token}` };

    const sentAt = new Map();
    const failures = [];
    const answered = new Map();
    const started = Date.now();
    const created = await paced(http_, {
      url: `${controller}/api/v1/tasks/`, headers, count: taskCount, rate: taskRate,
      body: (i) => taskBody(i, { env: { BENCH_REPORT_URL: report.url } }),
      onAnswer: (index, answer, sent) => {
        if (answer.status !== 201) return failures.push(`#${index}: ${answer.status} ${answer.text.slice(0, 200)}`);
        const task = JSON.parse(answer.text);
        sentAt.set(task.guid, sent);
        countStatus(answered, task.status);
      },
    });

    // Bounded wait until every created task is final at the controller.
    const finals = new Map();
    const deadline = started + waitSeconds * 1000;
    while (finals.size < sentAt.size && Date.now() < deadline) {
      const open = [...sentAt.keys()].filter((guid) => !finals.has(guid));
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < open.length) {
            const guid = open[next++];
            const { status, body } = await http_.getJson(`${controller}/api/v1/tasks/${guid}/`, headers).catch(() => ({ status: 'error' }));
            if (status === 200 && FINAL.includes(body.status)) finals.set(guid, { status: body.status, closedAt: Date.parse(body.finished_at) || Date.now() });
          }
        }),
      );
      if (finals.size < sentAt.size) await sleep(500);
    }
    // One last look at every task by guid: its status now, or lost when the controller does not know it.
    const byStatus = new Map();
    for (const guid of sentAt.keys()) {
      const { status, body } = await http_.getJson(`${controller}/api/v1/tasks/${guid}/`, headers).catch(() => ({ status: 'error' }));
      countStatus(byStatus, status === 200 ? body.status : `lost (GET answered ${status})`);
    }
    for (let i = 0; i < taskCount - sentAt.size; i++) countStatus(byStatus, 'never created');

    const toCheckin = [...sentAt].filter(([guid]) => report.checkins.has(guid)).map(([guid, sent]) => report.checkins.get(guid) - sent);
    const toClosed = [...finals].map(([guid, final]) => final.closedAt - sentAt.get(guid));
    const lastClosed = finals.size ? Math.max(...[...finals.values()].map((final) => final.closedAt)) : Date.now();
    const seconds = (lastClosed - started) / 1000;
    const run = {
      created, answered, failures, byStatus, reported: toCheckin.length, seconds,
      // Tasks closed per second, from the first POST to the last task final; only `completed` ones count.
      rate: (byStatus.get('completed') ?? 0) / seconds,
      checkinP50: percentile(toCheckin, 50), checkinP99: percentile(toCheckin, 99),
      closedP50: percentile(toClosed, 50), closedP99: percentile(toClosed, 99),
    };
    console.log(`   C run: ${run.rate.toFixed(2)} tasks/s (all final ${seconds.toFixed(1)} s after the first POST); POST -> check-in p50 ${ms(run.checkinP50)}, p99 ${ms(run.checkinP99)} (${run.reported}/${sentAt.size} agents reported); POST -> closed p50 ${ms(run.closedP50)}, p99 ${ms(run.closedP99)}; creations ${created.rate.toFixed(1)}/s, p50 ${ms(created.p50)}; at the controller: ${tally(byStatus)}`);
    for (const failure of failures.slice(0, 5)) console.log(`   failed POST ${failure}`);
    return run;
  } finally {
    http_.close();
    peaks.all = Math.max(peaks.all ?? 0, sampler?.stop() ?? 0);
    await server?.stop();
    await report.close();
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-pipeline-'));
  if (process.env.BENCH_DATABASE_URL) {
    // One run's pending tasks would be dispatched in the next: each run needs a database of its own.
    throw new Error('bench-pipeline creates a fresh database per run on local PostgreSQL; unset BENCH_DATABASE_URL');
  }
  /** `fn` given a fresh database, dropped when it is done. */
  const onFresh = async (fn) => {
    const db = await database();
    try {
      if (!db.url) throw new Error('bench-pipeline needs local PostgreSQL (127.0.0.1:5432, user postgres)');
      return await fn(db);
    } finally {
      await db.drop();
    }
  };
  const x = (value) => `${value.toFixed(2)}x`;
  const share = (value) => `${(100 * value).toFixed(0)}%`;
  const perSecond = (value) => `${value.toFixed(1)}/s`;
  const tasksPerSecond = (value) => `${value.toFixed(2)} tasks/s`;
  let services;
  try {
    services = await productionServices();
    premises(
      services.statement, `PostgreSQL (local, a fresh database per run; server pool ${SERVER_POOL_SIZE}, the DATABASE_POOL_SIZE default)`,
      `consumer: ${allInOneConsumer(maxConcurrent)}${agentKind === 'node' ? ` (${BENCH_AGENT_IMAGE} -> ${AGENT_COMMAND.join(' ')})` : ''}`,
      `${rounds} runs per section, each between two baseline runs`,
    );

    // A, with B interleaved: B, A, B, A, ..., B.
    console.log(`A. controller task creations: ${creates} POST /api/v1/tasks/ per run (inline brief, runtime local, image ${BENCH_AGENT_IMAGE}), ${clients} keep-alive clients, after ${warmup} warm-up requests;`);
    console.log(`   the server's dispatcher consumes while they go on: each task is stored, dispatched, its brief written to S3 and its agent run`);
    console.log(`B. baseline: a bare node:http server in a child process: parse the JSON body, timingSafeEqual on the token, INSERT one row (uuid, jsonb, created_at) through pg (pool ${SERVER_POOL_SIZE}), 201 with its id; the same load`);
    const ab = await interleaved(
      rounds,
      () => onFresh((db) => benchBaseline(db)),
      (round) => onFresh((db) => benchCreations(db, path.join(work, `creations-${round}`), services)),
    );
    const aShares = ab.ratios((run) => run.rate);
    const aP50Ratios = ab.ratios((run) => run.p50);
    const aStatuses = mergeStatuses(...ab.runs.map((run) => run.statuses));
    console.log(`A. over ${rounds} runs: ${spread(ab.runs.map((run) => run.rate), perSecond)}; p50 ${spread(ab.runs.map((run) => run.p50), ms)}; p99 ${spread(ab.runs.map((run) => run.p99), ms)}`);
    console.log(`   answers: ${tally(aStatuses)}; task status in the 201s: ${tally(mergeStatuses(...ab.runs.map((run) => run.taskStatuses))) || 'none'}`);
    console.log(`B. over ${rounds + 1} runs: ${spread(ab.baselines.map((run) => run.rate), perSecond)}; p50 ${spread(ab.baselines.map((run) => run.p50), ms)}`);
    console.log(`   A over the mean of the B runs before and after it: throughput ${spread(aShares, share)}; p50 ${spread(aP50Ratios, x)}  (target: >= 300/s, p50 < 30 ms)`);
    const aOk = requireStatuses('A. task creations', aStatuses, [201]) & requireStatuses('B. baseline', mergeStatuses(...ab.baselines.map((run) => run.statuses)), [201]);
    const aRate = medianOf(ab.runs, (run) => run.rate);
    const aP50 = medianOf(ab.runs, (run) => run.p50);
    emitFigure({
      figure: 'pipeline A. task creations, dispatcher consuming', value: `${perSecond(aRate)}, p50 ${ms(aP50)}`,
      baseline: `${perSecond(medianOf(ab.baselines, (run) => run.rate))} bare insert`, ratio: share(median(aShares)),
      target: '>= 300/s, p50 < 30 ms', met: Boolean(aOk) && aRate >= 300 && aP50 < 30,
    });

    // C, with its floor interleaved: floor, C, floor, C, ..., floor.
    console.log(`C. POST to agent check-in: ${taskCount} tasks per run of image ${BENCH_AGENT_IMAGE} -> ${AGENT_COMMAND.join(' ')} (a process per task: check in, report the time, check back completed, exit),`);
    console.log(`   POSTs sent at a steady ${taskRate}/s, MAX_CONCURRENT_TASKS=${maxConcurrent}, every task waited for until final (at most ${waitSeconds} s)`);
    console.log(`   floor: the same agent spawned bare at ${taskRate}/s, ${taskCount} per run, checking in and back at a server that answers at once and stores nothing; in both, the check-in's moment is the agent's report that it was answered`);
    const c = await interleaved(
      rounds,
      () => bareSpawnFloor(taskCount),
      (round) => onFresh((db) => benchCheckins(db, path.join(work, `checkins-${round}`), services)),
    );
    const cShares = c.ratios((run) => run.rate);
    const cP50Ratios = c.ratios((run) => run.checkinP50);
    const cCreated = mergeStatuses(...c.runs.map((run) => run.created.statuses));
    const cFinal = mergeStatuses(...c.runs.map((run) => run.byStatus));
    console.log(`C. over ${rounds} runs: ${spread(c.runs.map((run) => run.rate), tasksPerSecond)} (first POST to last task final, completed ones)`);
    console.log(`   POST -> check-in answered: p50 ${spread(c.runs.map((run) => run.checkinP50), ms)}; p99 ${spread(c.runs.map((run) => run.checkinP99), ms)}`);
    console.log(`   POST -> closed at the controller (its finished_at): p50 ${spread(c.runs.map((run) => run.closedP50), ms)}; p99 ${spread(c.runs.map((run) => run.closedP99), ms)}`);
    console.log(`   creations under that load: ${spread(c.runs.map((run) => run.created.rate), perSecond)} (paced at ${taskRate}/s); answers: ${tally(cCreated)}; at the controller: ${tally(cFinal)}`);
    console.log(`   floor over ${rounds + 1} runs: ${spread(c.baselines.map((run) => run.rate), tasksPerSecond)}; spawn -> check-in p50 ${spread(c.baselines.map((run) => run.checkinP50), ms)}; bare agents' exit codes: ${tally(mergeStatuses(...c.baselines.map((run) => run.exits)))}`);
    console.log(`   C over the mean of the floor runs before and after it: tasks/s ${spread(cShares, share)} (target >= 60%); check-in p50 ${spread(cP50Ratios, x)} (target <= 1.5x)`);
    const cOk = requireStatuses('C. task creations', cCreated, [201]) & requireStatuses('C. final task statuses', cFinal, ['completed'])
      & requireStatuses('C. bare agents (exit code)', mergeStatuses(...c.baselines.map((run) => run.exits)), [0])
      & requireStatuses('C. floor check-ins', mergeStatuses(...c.baselines.map((run) => run.checkedIn)), ['checked in']);
    emitFigure({
      figure: 'pipeline C. tasks end to end (POST to final)', value: tasksPerSecond(medianOf(c.runs, (run) => run.rate)),
      baseline: `${tasksPerSecond(medianOf(c.baselines, (run) => run.rate))} bare spawns`, ratio: share(median(cShares)),
      target: '>= 60% of the floor; every task completed', met: Boolean(cOk) && median(cShares) >= 0.6,
    });
    emitFigure({
      figure: 'pipeline C. POST to agent check-in p50', value: ms(medianOf(c.runs, (run) => run.checkinP50)),
      baseline: `${ms(medianOf(c.baselines, (run) => run.checkinP50))} bare spawn`, ratio: x(median(cP50Ratios)),
      target: '<= 1.5x the floor', met: Boolean(cOk) && median(cP50Ratios) <= 1.5,
    });
    const mib = (value) => (value === undefined ? 'n/a' : `${value.toFixed(0)} MiB`);
    console.log(`D. peak RSS over the runs: all-in-one server in A ${mib(peaks.controller)}; baseline server (B) ${mib(peaks.baseline)}; all-in-one server in C ${mib(peaks.all)} (agents are processes of their own, not counted)`);
  } finally {
    await services?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  if (process.exitCode) console.error('bench-pipeline: some requests or tasks did not succeed (see above)');
}

runBenchScript(main, baselineServer);
