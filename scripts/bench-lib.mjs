// What the benchmark scripts share: a database, a free port, the built server as a child
// process (at the production log level, its access log written to a file), the production
// services (s3rver, Redis), its memory, percentiles and spreads, status checks, and the
// figure lines `npm run bench` gathers into its closing table.
import { fork, spawn } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

export const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** BENCH_DATABASE_URL, else a fresh database on local PostgreSQL, else none (embedded PGlite). */
export async function database() {
  if (process.env.BENCH_DATABASE_URL) return { url: process.env.BENCH_DATABASE_URL, drop: async () => {} };
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', connectionTimeoutMillis: 1500 });
  try {
    await admin.connect();
  } catch {
    return { url: undefined, drop: async () => {} };
  }
  const name = `atc_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

export function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

/** Samples a process's RSS every 10 ms until stopped; returns the peak. */
export function rssSampler(pid) {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // the process ended
    }
  }, 10);
  return { stop: () => (clearInterval(timer), peak) };
}

/**
 * Boots `dist/src/main.js` (of this checkout, or of `serverRoot`) with the given settings and waits until `healthUrl` answers 200.
 * It runs at the production default log level (`info`: one access line per request), its
 * output written to a file as a container runtime would collect it. BENCH_SERVER_NODE_ARGS
 * adds Node options to the server alone, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to
 * profile it under the benchmark's load. `serverRoot` runs another built checkout instead
 * (a baseline from before a change).
 */
export async function bootServer(env, healthUrl, serverRoot = root) {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'bench-log-')), 'server.log');
  const child = spawn(process.execPath, [...nodeArgs, path.join(serverRoot, 'dist/src/main.js')], {
    cwd: serverRoot,
    env: { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', openSync(logFile, 'a'), 'inherit'],
  });
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (await fetch(healthUrl).then((r) => r.ok, () => false)) {
      return {
        child,
        logFile,
        stop: async () => {
          child.kill('SIGTERM');
          await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${healthUrl} did not become healthy`);
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

export const median = (values) => percentile(values, 50);

/** The median of one figure over repeated runs: `medianOf(runs, (run) => run.rate)`. */
export const medianOf = (runs, pick) => median(runs.map(pick));

/** A process's user + system CPU time so far, in ms, from /proc/<pid>/stat (clock ticks of 10 ms, USER_HZ 100). */
export const cpuMs = (pid) => statCpuMs(`/proc/${pid}/stat`);

/** The same for the process's main thread alone (its JavaScript; V8's compiler and collector threads left out). */
export const mainThreadCpuMs = (pid) => statCpuMs(`/proc/${pid}/task/${pid}/stat`);

function statCpuMs(file) {
  const stat = readFileSync(file, 'utf8');
  // The command name in parentheses may hold spaces or parentheses: the fields start after the last `) `.
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

export const secret = () => randomBytes(24).toString('base64url');

/**
 * A bench script's entry: its baseline server when forked with `--baseline-server` (the
 * scripts fork themselves so the baseline runs in a process of its own), else `main`.
 */
export function runBenchScript(main, baselineServer) {
  if (process.argv[2] === '--baseline-server') {
    Promise.resolve().then(baselineServer).catch((error) => {
      console.error(error);
      process.exit(1);
    });
    return;
  }
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/**
 * The services a production installation runs beside the server: an S3 server (s3rver on
 * loopback, in this process) and Redis (REDIS_URL, default 127.0.0.1:6379, which must answer).
 * `env` is the server's settings for them; `statement` says so in the output.
 */
export async function productionServices() {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const { default: Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch {
    throw new Error(`Redis at ${redisUrl} does not answer: the benchmarks run with Redis, as production does`);
  } finally {
    redis.disconnect();
  }
  const S3rver = createRequire(import.meta.url)('s3rver');
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: mkdtempSync(path.join(tmpdir(), 'bench-s3-')) });
  const { port } = await s3.run();
  return {
    env: { REDIS_URL: redisUrl, S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_ACCESS_KEY: 'S3RVER', S3_SECRET_KEY: 'S3RVER', S3_BUCKET: `bench-${randomBytes(3).toString('hex')}` },
    statement: `server at LOG_LEVEL=info with its access log (to a file), objects in s3rver, cache in Redis ${redisUrl}`,
    stop: () => s3.close(),
  };
}

/** `median X (min A, max B, n N)`: a figure over repeated runs, with its spread. */
export function spread(values, format = (value) => value.toFixed(0)) {
  const sorted = [...values].sort((a, b) => a - b);
  return `median ${format(median(sorted))} (min ${format(sorted[0])}, max ${format(sorted.at(-1))}, n ${sorted.length})`;
}

/**
 * Fails the run (exit code 1) when any answer's status is not one of `expected`, naming what
 * came back; a benchmark never counts a refused or failed request as done work.
 */
export function requireStatuses(what, statuses, expected) {
  const unexpected = [...statuses].filter(([status]) => !expected.includes(status));
  if (unexpected.length === 0) return true;
  console.log(`   FAILED: ${what} answered ${unexpected.map(([status, n]) => `${status} x${n}`).join(', ')}; only ${expected.join(', ')} expected`);
  process.exitCode = 1;
  return false;
}

/**
 * One line `npm run bench` (scripts/bench.mjs) gathers into its closing table: the figure, its
 * baseline, their ratio, the target the ratio is held to, and whether it was met.
 */
export function emitFigure({ figure, value, baseline, ratio, target, met }) {
  console.log(`BENCH-FIGURE ${JSON.stringify({ figure, value, baseline, ratio, target, met })}`);
}

/** The first line of every bench script: what its figures are taken against. */
export function premises(...parts) {
  console.log(`runs against: ${parts.filter(Boolean).join('; ')}`);
}

/** The image every bench maps to the smallest agent: a shell and curl that check in, report, check back `completed`. */
export const BENCH_AGENT_IMAGE = 'bench/checkin';
export const BENCH_AGENT_COMMAND = 'sh scripts/bench-agent.sh';

/** Waits until the controller lists an online dispatcher (the local one registers itself after boot). */
export async function dispatcherOnline(controller, token) {
  const onlineBy = Date.now() + 60_000;
  for (;;) {
    const answer = await fetch(`${controller}/api/v1/dispatchers/`, { headers: { authorization: `Token ${token}` } }).catch(() => null);
    const body = answer?.status === 200 ? await answer.json() : null;
    const list = Array.isArray(body) ? body : (body?.results ?? []);
    if (list.some((dispatcher) => dispatcher.state === 'online')) return;
    if (Date.now() > onlineBy) throw new Error('the local dispatcher was not online at the controller within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Where agents (scripts/bench-agent.sh and .mjs) report the moment their check-in was answered,
 * as `{task_id, t}` POSTed to `url`: the first report of each task is kept in `checkins`.
 */
export async function checkinReports() {
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

/** What consumes the tasks of bootAllInOne's server, for the first lines of the output. */
export const allInOneConsumer = (maxConcurrent = 32) =>
  `ROLE=all, its dispatcher online and consuming (LOCAL_ENGINE=process, ${BENCH_AGENT_IMAGE} -> ${BENCH_AGENT_COMMAND}, MAX_CONCURRENT_TASKS=${maxConcurrent})`;

/**
 * The all-in-one server as production runs it: ROLE=all, its dispatcher online and consuming
 * (LOCAL_ENGINE=process, the image `bench/checkin` mapped to scripts/bench-agent.sh), with the
 * production services' settings. Answers the server, its two base URLs, its API token and a
 * sentence for the output saying what consumes the tasks.
 */
export async function bootAllInOne({ services, databaseUrl, dataDir, maxConcurrent = 32, imageCommands = {}, env = {}, main }) {
  // `main`: another build's dist/src/main.js, its checkout the server's root.
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const token = secret();
  const controller = `http://127.0.0.1:${controllerPort}`;
  const server = await bootServer({
    ...services.env, ROLE: 'all', NODE_ENV: 'development', DATA_DIR: dataDir, DATABASE_URL: databaseUrl,
    CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort), API_TOKEN: token,
    LOCAL_ENGINE: 'process', MAX_CONCURRENT_TASKS: String(maxConcurrent), HEARTBEAT_INTERVAL_SECONDS: '2',
    LOCAL_IMAGE_COMMANDS: JSON.stringify({ [BENCH_AGENT_IMAGE]: BENCH_AGENT_COMMAND, ...imageCommands }), ...env,
  }, `${controller}/health/`, main ? path.resolve(path.dirname(main), '../..') : root);
  await dispatcherOnline(controller, token);
  return {
    ...server, controller, dispatcher: `http://127.0.0.1:${dispatcherPort}`, token,
    consumer: allInOneConsumer(maxConcurrent),
  };
}

/**
 * Baselines interleaved with the measured runs: baseline, run, baseline, run, ..., baseline.
 * Each run's ratio is its figure over the mean of the baseline runs just before and after it,
 * so a machine that speeds up or slows down during the benchmark moves both.
 */
export async function interleaved(rounds, baseline, measured) {
  const baselines = [await baseline(0)];
  const runs = [];
  for (let round = 0; round < rounds; round++) {
    runs.push(await measured(round));
    baselines.push(await baseline(round + 1));
  }
  const ratios = (pick) => runs.map((run, i) => pick(run) / ((pick(baselines[i]) + pick(baselines[i + 1])) / 2));
  return { runs, baselines, ratios };
}

/** Adds one answer's status to a tally (a Map status -> count). */
export function countStatus(statuses, status) {
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
}

/** Merges tallies. */
export function mergeStatuses(...tallies) {
  const merged = new Map();
  for (const tally of tallies) for (const [status, n] of tally) merged.set(status, (merged.get(status) ?? 0) + n);
  return merged;
}

export const tally = (statuses) => [...statuses].map(([status, n]) => `${status} x${n}`).join(', ');

/**
 * Starts a script's baseline server: the script forked with `--baseline-server` (so the
 * baseline runs in a process of its own; runBenchScript sends it to its baseline function),
 * with `env` added. Answers its URL, its child process (for rssSampler) and a stop function.
 */
export async function forkBaseline(script, env) {
  const child = fork(script, ['--baseline-server'], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the baseline server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/`, child, stop: () => child.disconnect() };
}

/**
 * The webhook baseline (the forked child's side): a bare node:http server that checks one
 * HMAC-SHA256 (`sha256=<hex>` in the BASELINE_SIGNATURE_HEADER header, x-hub-signature-256
 * unless set) with BASELINE_SECRET and INSERTs one row per request into
 * BASELINE_DATABASE_URL, answering 202; 401 for a wrong signature.
 */
export async function hmacInsertServer() {
  const pool = new pg.Pool({ connectionString: process.env.BASELINE_DATABASE_URL, max: 10 });
  // The database is dropped at the end with its connections: an idle client's error then is expected.
  pool.on('error', () => undefined);
  const header = process.env.BASELINE_SIGNATURE_HEADER ?? 'x-hub-signature-256';
  await pool.query('CREATE TABLE IF NOT EXISTS bench_deliveries (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const expected = Buffer.from(`sha256=${createHmac('sha256', process.env.BASELINE_SECRET).update(raw).digest('hex')}`);
      const given = Buffer.from(String(req.headers[header] ?? ''));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return void res.writeHead(401).end();
      try {
        await pool.query('INSERT INTO bench_deliveries (body) VALUES ($1)', [JSON.parse(raw.toString('utf8'))]);
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"ignored"}');
      } catch {
        res.writeHead(503).end();
      }
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('disconnect', () => server.close(() => void pool.end().finally(() => process.exit(0))));
}

/** POSTs `body` as JSON through the keep-alive `agent` and answers the status, the body read and dropped. */
export function postStatus(agent, url, body, headers) {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = http.request({ hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The test API server and what it needs, compiled to CommonJS under dist/ (where node_modules resolves). */
export function loadKubeApiServer() {
  const require = createRequire(import.meta.url);
  const { transformFileSync } = require('@swc/core');
  const source = path.join(root, 'test/k8s');
  const out = path.join(root, 'dist/bench-k8s');
  mkdirSync(out, { recursive: true });
  for (const file of readdirSync(source).filter((name) => /^kube-[a-z-]+\.ts$/.test(name) && name !== 'kube-fixtures.ts')) {
    const { code } = transformFileSync(path.join(source, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    writeFileSync(path.join(out, file.replace(/\.ts$/, '.js')), code);
  }
  return require(path.join(out, 'kube-api-server.js')).KubeApiServer;
}

/**
 * A dispatcher stand-in checked in at `controller` (its API token `token`): it takes every task
 * at once (201) and keeps each one's callback token, and runs no agent. A consumer online, so
 * the controller's dispatch loop works during a measurement as in production, without agents'
 * processes on the machine. It beats as a dispatcher does (else it is offline two intervals
 * after its check-in and the loop stops sending), with no capacity limit to speak of: the tasks
 * it takes never finish. `tokens` maps task guid to callback token.
 */
export async function dispatcherStandIn(controller, token, name = 'bench') {
  const tokens = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const task = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      if (task.task_id) tokens.set(task.task_id, task.callback_token);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, data: { task_id: task.task_id, status: 'pending' } }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const checkin = await fetch(`${controller}/api/v1/dispatchers/checkin/`, {
    method: 'POST', headers, body: JSON.stringify({ name, endpoint_url: url, backends: ['local'], api_key: secret(), heartbeat_interval_seconds: 5 }),
  });
  if (checkin.status >= 300) {
    server.close();
    throw new Error(`the dispatcher stand-in's check-in was refused: ${checkin.status} ${await checkin.text()}`);
  }
  const { dispatcher_guid: guid } = await checkin.json();
  const beat = () => fetch(`${controller}/api/v1/dispatchers/heartbeat/`, {
    method: 'POST', headers, body: JSON.stringify({ dispatcher_guid: guid, active_tasks: 0, capacity: 1_000_000_000 }),
  }).then(async (answer) => {
    if (answer.status !== 200) console.error(`the dispatcher stand-in's heartbeat was answered ${answer.status}: ${await answer.text()}`);
  }, () => undefined);
  await beat();
  const beating = setInterval(beat, 2_000);
  beating.unref();
  return { url, tokens, close: () => { clearInterval(beating); server.close(); } };
}

