#!/usr/bin/env node
// The task pipeline on real PostgreSQL, in one run:
//  A. task creations at the controller: concurrent clients POST /api/v1/tasks/ to the
//     all-in-one server with its dispatcher online and consuming (process engine, the shell
//     agent below), so each task is stored, dispatched, its brief written to S3 and its agent
//     run while the creations go on, as in production;
//  B. a baseline for A on the same machine, run just before and just after A: a bare
//     node:http server with a pg pool (in a child process) that parses the JSON body, checks
//     the token in constant time and INSERTs one row per request; A's figures are printed as
//     a % of the mean of those two runs;
//  C. POST to agent check-in: the all-in-one server runs each task's minimal agent
//     (scripts/bench-agent.sh, or .mjs with BENCH_PIPELINE_AGENT=node) as a local process; the time from each POST to the agent's
//     check-in being answered, and to the task being closed at the controller, and whether
//     every task ended `completed`;
//  D. the servers' peak RSS.
// The servers run as in production: LOG_LEVEL=info with the access log, s3rver, Redis.
// Needs local PostgreSQL (127.0.0.1:5432, user postgres) or BENCH_DATABASE_URL, and Redis;
// each section gets a fresh database, dropped at the end. `npm run build` first.
//
//   BENCH_PIPELINE_CREATES=2000 BENCH_PIPELINE_CLIENTS=16 BENCH_PIPELINE_TASKS=200
//   BENCH_PIPELINE_TASK_RATE=10 BENCH_PIPELINE_MAX_CONCURRENT=32 BENCH_PIPELINE_WAIT_SECONDS=300
import { fork, spawn } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { bootServer, database, dispatcherOnline, emitFigure, freePort, percentile, productionServices, requireStatuses, rssSampler, secret, runBenchScript } from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const creates = env('BENCH_PIPELINE_CREATES', 2000);
const clients = env('BENCH_PIPELINE_CLIENTS', 16);
const taskCount = env('BENCH_PIPELINE_TASKS', 200);
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
const AGENT_IMAGE = 'bench/checkin';
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
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
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
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    onAnswer?.(index, answer, sentAt);
  }));
  const seconds = (performance.now() - started) / 1000;
  return { seconds, rate: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}

/**
 * The floor under section C: the same agent spawned bare, at the same pace, checking in at
 * a server that answers at once. Spawn to check-in answered, p50 and p99.
 */
async function bareSpawnFloor(count) {
  const checkins = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/agent/checkin') checkins.set(JSON.parse(Buffer.concat(chunks).toString('utf8')).task_id, Date.now());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
  const spawnedAt = new Map();
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, index) => {
    await sleep(Math.max(0, started + (index * 1000) / taskRate - performance.now()));
    const taskId = `bare-${index}`;
    spawnedAt.set(taskId, Date.now());
    const child = spawn(AGENT_COMMAND[0], AGENT_COMMAND.slice(1), {
      cwd: root,
      env: { PATH: process.env.PATH, TASK_ID: taskId, DISPATCHER_URL: `http://127.0.0.1:${port}`, AGENT_KEY: 'k' },
      stdio: 'ignore',
    });
    await new Promise((resolve) => child.once('exit', resolve));
  }));
  await new Promise((resolve) => server.close(resolve));
  const waits = [...spawnedAt].filter(([id]) => checkins.has(id)).map(([id, at]) => checkins.get(id) - at);
  return { p50: percentile(waits, 50), p99: percentile(waits, 99), n: waits.length };
}

const peaks = {};
const tally = (map) => [...map].map(([key, n]) => `${key} x${n}`).join(', ');
const ms = (value) => (value === undefined ? 'n/a' : `${value.toFixed(1)} ms`);
const pct = (part, whole) => `${((part / whole) * 100).toFixed(1)} %`;
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

function taskBody(index, extra = {}) {
  return JSON.stringify({
    agent_image: AGENT_IMAGE,
    runtime_target: { type: 'local', namespace: '' },
    resources: { cpu: '100m', memory: '128Mi' },
    timeout_seconds: 300,
    brief: { bench: 'pipeline', n: index, prompt: 'Summarise the pull request and list the risky changes.' },
    ...extra,
  });
}

// ---------------------------------------------------------------- A. controller creations

async function benchCreations(db, work, services) {
  const [port, dispatcherPort] = [await freePort(), await freePort()];
  const token = secret();
  const controller = `http://127.0.0.1:${port}`;
  const server = await bootServer(
    {
      ...services.env, ROLE: 'all', NODE_ENV: 'development', DATA_DIR: path.join(work, 'creations'), DATABASE_URL: db.url,
      CONTROLLER_PORT: String(port), DISPATCHER_PORT: String(dispatcherPort), API_TOKEN: token,
      LOCAL_ENGINE: 'process', MAX_CONCURRENT_TASKS: String(maxConcurrent), HEARTBEAT_INTERVAL_SECONDS: '2',
      LOCAL_IMAGE_COMMANDS: JSON.stringify({ [AGENT_IMAGE]: AGENT_COMMAND.join(' ') }),
    },
    `${controller}/health/`,
  );
  await dispatcherOnline(controller, token);
  const sampler = rssSampler(server.child.pid);
  const http_ = client();
  try {
    const headers = { authorization: `Token ${token}` };
    const url = `${controller}/api/v1/tasks/`;
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
        if (answer.status === 201) taskStatuses.set(status, (taskStatuses.get(status) ?? 0) + 1);
      },
    });
    console.log(`A. controller task creations: ${creates} POST /api/v1/tasks/ (inline brief, runtime local, image ${AGENT_IMAGE}), ${clients} keep-alive clients, after ${warmup} warm-up requests`);
    console.log(`   server: ROLE=all, its dispatcher online and consuming (LOCAL_ENGINE=process, ${AGENT_COMMAND.join(' ')}, MAX_CONCURRENT_TASKS=${maxConcurrent}): each task is stored, dispatched and run; ${services.statement}`);
    console.log(`   answers: ${tally(result.statuses)}; task status in the 201s: ${tally(taskStatuses) || 'none'}`);
    requireStatuses('A. task creations', result.statuses, [201]);
    console.log(`   ${result.rate.toFixed(1)} creations/s; latency p50 ${ms(result.p50)}, p99 ${ms(result.p99)}  (target: >= 300/s, p50 < 30 ms: ${result.rate >= 300 && result.p50 < 30 ? 'met' : 'not met'})`);
    return { ...result, ok: result.statuses.get(201) === creates };
  } finally {
    http_.close();
    peaks.controller = sampler.stop();
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

async function benchBaseline(db, label, controllerFigures, earlier) {
  const token = secret();
  const child = fork(fileURLToPath(import.meta.url), ['--baseline-server'], {
    env: { ...process.env, BASELINE_DATABASE_URL: db.url, BASELINE_POOL_SIZE: String(SERVER_POOL_SIZE), BASELINE_TOKEN: token },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const http_ = client();
  let sampler;
  try {
    const { port } = await Promise.race([
      new Promise((resolve) => child.once('message', resolve)),
      exited.then((code) => Promise.reject(new Error(`the baseline server exited with ${code}`))),
      sleep(30_000).then(() => Promise.reject(new Error('the baseline server did not start within 30 s'))),
    ]);
    sampler = rssSampler(child.pid);
    const url = `http://127.0.0.1:${port}/api/v1/tasks/`;
    const headers = { authorization: `Token ${token}` };
    await load(http_, { url, headers, count: warmup, width: clients, body: (i) => taskBody(-1 - i) });
    const result = await load(http_, { url, headers, count: creates, width: clients, body: (i) => taskBody(i) });
    console.log(`B. baseline, ${label}: bare node:http server in a child process: parse the JSON body, timingSafeEqual on the token, INSERT one row (uuid, jsonb, created_at) through pg (pool ${SERVER_POOL_SIZE}), 201 with its id`);
    console.log(`   same load: ${creates} POSTs, ${clients} keep-alive clients, after ${warmup} warm-up requests; answers: ${tally(result.statuses)}`);
    console.log(`   ${result.rate.toFixed(1)} requests/s; latency p50 ${ms(result.p50)}, p99 ${ms(result.p99)}`);
    requireStatuses(`B. baseline, ${label}`, result.statuses, [201]);
    if (controllerFigures) {
      // A sits between this run and the one before it: it is compared with their mean, so a machine that drifts moves both.
      const mean = (key) => (earlier ? (earlier[key] + result[key]) / 2 : result[key]);
      const reference = { rate: mean('rate'), p50: mean('p50'), p99: mean('p99') };
      const c = controllerFigures;
      console.log(`   controller as % of the mean of the baseline runs before and after it (${reference.rate.toFixed(1)} requests/s): throughput ${pct(c.rate, reference.rate)}; p50 ${pct(c.p50, reference.p50)} (${(c.p50 / reference.p50).toFixed(1)}x); p99 ${pct(c.p99, reference.p99)} (${(c.p99 / reference.p99).toFixed(1)}x)`);
      emitFigure({
        figure: 'A. task creations (pipeline)', value: `${c.rate.toFixed(0)}/s, p50 ${ms(c.p50)}`, baseline: `${reference.rate.toFixed(0)}/s`,
        ratio: pct(c.rate, reference.rate), target: '>= 300/s, p50 < 30 ms', met: c.ok && c.rate >= 300 && c.p50 < 30,
      });
    }
    return { ...result, ok: result.statuses.get(201) === creates };
  } finally {
    http_.close();
    peaks.baseline = sampler?.stop();
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, sleep(5000).then(() => child.kill('SIGKILL'))]);
  }
}

// ---------------------------------------------------------------- C. POST to check-in

/** Where the agents report the moment their check-in was answered. */
async function reportServer() {
  const checkins = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const { task_id: taskId, t } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (!checkins.has(taskId)) checkins.set(taskId, t);
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  return { url: `http://127.0.0.1:${port}/report`, checkins, close: () => new Promise((resolve) => server.close(resolve)) };
}

async function benchCheckins(db, work, services) {
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const token = secret();
  const controller = `http://127.0.0.1:${controllerPort}`;
  const report = await reportServer();
  let server;
  let sampler;
  const http_ = client();
  try {
    server = await bootServer(
      {
        ...services.env, ROLE: 'all', NODE_ENV: 'development', DATA_DIR: path.join(work, 'all'), DATABASE_URL: db.url,
        CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort), API_TOKEN: token,
        LOCAL_ENGINE: 'process', MAX_CONCURRENT_TASKS: String(maxConcurrent), HEARTBEAT_INTERVAL_SECONDS: '2',
        LOCAL_IMAGE_COMMANDS: JSON.stringify({ [AGENT_IMAGE]: AGENT_COMMAND.join(' ') }),
      },
      `${controller}/health/`,
    );
    sampler = rssSampler(server.child.pid);
    const headers = { authorization: `Token ${token}` };

    await dispatcherOnline(controller, token);

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
        answered.set(task.status, (answered.get(task.status) ?? 0) + 1);
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
      const key = status === 200 ? body.status : `lost (GET answered ${status})`;
      byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
    }

    const toCheckin = [...sentAt].filter(([guid]) => report.checkins.has(guid)).map(([guid, sent]) => report.checkins.get(guid) - sent);
    const toClosed = [...finals].map(([guid, final]) => final.closedAt - sentAt.get(guid));
    const completed = byStatus.get('completed') ?? 0;
    const notFinal = [...byStatus].filter(([status]) => !FINAL.includes(status));
    console.log(`C. POST to agent check-in: ROLE=all, LOCAL_ENGINE=process, MAX_CONCURRENT_TASKS=${maxConcurrent}; ${taskCount} tasks of image ${AGENT_IMAGE} -> ${AGENT_COMMAND.join(' ')}`);
    console.log(`   (a process per task: check in, report the time, check back completed, exit); POSTs sent at a steady ${taskRate}/s`);
    console.log(`   creations: ${created.rate.toFixed(1)}/s, p50 ${ms(created.p50)}, p99 ${ms(created.p99)}; answers: ${tally(created.statuses)}; task status in the 201s: ${tally(answered) || 'none'}`);
    for (const failure of failures.slice(0, 5)) console.log(`   failed POST ${failure}`);
    console.log(`   POST -> check-in answered: p50 ${ms(percentile(toCheckin, 50))}, p99 ${ms(percentile(toCheckin, 99))} (${toCheckin.length}/${sentAt.size} agents reported)  (target: p50 < 150 ms, p99 < 500 ms)`);
    const floor = await bareSpawnFloor(Math.min(taskCount, 50));
    console.log(`   floor, same run: the same agent spawned bare at ${taskRate}/s, checking in at a server that answers at once: spawn -> check-in p50 ${ms(floor.p50)}, p99 ${ms(floor.p99)} (${floor.n} runs)`);
    const lastClosed = Math.max(...[...finals.values()].map((final) => final.closedAt));
    const allFinal = finals.size === sentAt.size ? `all final ${((lastClosed - started) / 1000).toFixed(1)} s after the first POST` : `only ${finals.size}/${sentAt.size} final`;
    console.log(`   POST -> closed at controller (its finished_at): p50 ${ms(percentile(toClosed, 50))}, p99 ${ms(percentile(toClosed, 99))}; ${allFinal}`);
    console.log(`   at the controller: ${tally(byStatus)}; ${completed}/${taskCount} completed; ${notFinal.length === 0 ? 'none lost, none left pending/dispatched/running' : `NOT FINAL after ${waitSeconds} s: ${tally(new Map(notFinal))}`}`);
    return { ok: completed === taskCount && failures.length === 0 };
  } finally {
    http_.close();
    peaks.all = sampler?.stop();
    await server?.stop();
    await report.close();
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-pipeline-'));
  const databases = [];
  if (process.env.BENCH_DATABASE_URL) {
    // A's pending tasks would be dispatched in C: each section needs a database of its own.
    throw new Error('bench-pipeline creates a fresh database per section on local PostgreSQL; unset BENCH_DATABASE_URL');
  }
  const fresh = async () => {
    const db = await database();
    databases.push(db);
    if (!db.url) throw new Error('bench-pipeline needs PostgreSQL: local 127.0.0.1:5432 (user postgres) or BENCH_DATABASE_URL');
    return db;
  };
  let ok = true;
  let services;
  try {
    services = await productionServices();
    console.log(`database: local PostgreSQL, a fresh database per section; ${services.statement}; server pool ${SERVER_POOL_SIZE} (DATABASE_POOL_SIZE default)`);
    const before = await benchBaseline(await fresh(), 'run before A');
    const a = await benchCreations(await fresh(), work, services);
    const b = await benchBaseline(await fresh(), 'run after A', a, before);
    const c = await benchCheckins(await fresh(), work, services);
    ok = before.ok && a.ok && b.ok && c.ok;
    const mib = (value) => (value === undefined ? 'n/a' : `${value.toFixed(0)} MiB`);
    console.log(`D. peak RSS: all-in-one server in A ${mib(peaks.controller)}; baseline server (B) ${mib(peaks.baseline)}; all-in-one server (C) ${mib(peaks.all)} (agents are processes of their own, not counted)`);
  } finally {
    await services?.stop();
    for (const db of databases) await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
  if (!ok) {
    console.error('bench-pipeline: some requests or tasks did not succeed (see above)');
    process.exitCode = 1;
  }
}

runBenchScript(main, baselineServer);
