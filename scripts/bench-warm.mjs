#!/usr/bin/env node
// Warm pools against cold starts, in the same run, on the process engine and on Podman (the
// docker engine): the dispatcher role as production runs it (LOG_LEVEL=info, s3rver, Redis,
// local PostgreSQL), tasks posted open-loop at BENCH_RATE (20) a second.
//  - start: POST /tasks to the agent's check-in. Process engine: the check-in answer as the
//    agent reports it (scripts/bench-warm-agent.mjs, the smallest agent, claiming first when
//    warm). Podman: the shell-warm image cannot report, so the time is up to its first progress
//    report (`progress.updated_at`, sent right after its check-in answer): an upper bound.
//    Warm runs fit the pool (WARM_POOLS, size BENCH_POOL_SIZE, 20); cold runs ask for more CPU
//    than the pool gives, so they start cold with the same agent. Cold, warm, cold, ... runs
//    (BENCH_ROUNDS, 3, warm runs), each warm run beside the cold runs before and after it.
//  - refill: the pool drained at once (BENCH_POOL_SIZE tasks posted together) until /ready shows
//    it full again (every agent handed to its runtime, which is what idle counts), against the
//    same number of cold tasks posted together until the last one checked in.
// Every POST must answer 201, every callback `completed`, every warm task run warm (else exit 1).
//
//   BENCH_RATE=20 BENCH_TASKS=40 BENCH_PODMAN_TASKS=20 BENCH_ROUNDS=3 BENCH_POOL_SIZE=20 BENCH_WARM_ENGINES=process,docker
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootServer, countStatus, database, emitFigure, freePort, interleaved, median, percentile, premises, productionServices, requireStatuses, runBenchScript, secret, spread, tally } from './bench-lib.mjs';

const rate = Number(process.env.BENCH_RATE ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const poolSize = Number(process.env.BENCH_POOL_SIZE ?? 20);
const engines = (process.env.BENCH_WARM_ENGINES ?? 'process,docker').split(',').map((name) => name.trim());
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const AGENT = path.join('scripts', 'bench-warm-agent.mjs');
const SHELL_WARM = 'localhost/agent-examples/shell-warm:latest';

const ENGINES = {
  process: {
    tasks: Number(process.env.BENCH_TASKS ?? 40),
    image: 'bench/warm',
    pool: { cpu: '1', memory: '256Mi' },
    env: { LOCAL_ENGINE: 'process', LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'bench/warm': `node ${AGENT}` }) },
    describe: `LOCAL_ENGINE=process, bench/warm -> node ${AGENT}; start measured to the agent's check-in answer`,
  },
  docker: {
    tasks: Number(process.env.BENCH_PODMAN_TASKS ?? 20),
    image: SHELL_WARM,
    pool: { cpu: '500m', memory: '64Mi' },
    env: { LOCAL_ENGINE: 'docker', DOCKER_HOST: process.env.DOCKER_HOST ?? 'unix:///tmp/atc-podman/podman.sock' },
    describe: `LOCAL_ENGINE=docker on Podman, ${SHELL_WARM}; start measured to its first progress report after check-in (an upper bound)`,
  },
};

/** The agents' check-in reports and the callbacks, by task. */
async function startReceiver() {
  const events = new Map();
  const waiters = new Map();
  const event = (taskId) => events.get(taskId) ?? events.set(taskId, {}).get(taskId);
  const server = createServer((request, response) => {
    const arrived = now();
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      if (request.url === '/report') {
        event(body.task_id).checkedIn = body.t;
        waiters.get(`${body.task_id}/report`)?.();
      }
      const finished = /^\/callback\/([0-9a-f-]{36})$/.exec(request.url ?? '')?.[1];
      if (finished) {
        Object.assign(event(finished), { callback: arrived, finalStatus: body.status ?? 'none' });
        waiters.get(`${finished}/callback`)?.();
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const waitFor = (taskId, what) => new Promise((resolve) => {
    if (event(taskId)[what === 'report' ? 'checkedIn' : 'callback'] !== undefined) return resolve();
    waiters.set(`${taskId}/${what}`, resolve);
  });
  return { url: `http://127.0.0.1:${server.address().port}`, events, waitFor, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
}

const posts = new Map();
const finals = new Map();
let misses = 0;

async function createTask(server, receiver, { warm }) {
  const taskId = randomUUID();
  const spec = ENGINES[server.engine];
  const t0 = now();
  const answer = await fetch(`${server.url}/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': server.apiKey },
    body: JSON.stringify({
      task_id: taskId, agent_image: spec.image, runtime_target: { type: 'local', namespace: '' },
      // Cold: more CPU than the pool gives, so the same agent starts cold.
      resources: warm ? spec.pool : { ...spec.pool, cpu: '2' },
      env: { BENCH_REPORT_URL: `${receiver.url}/report` }, callback_url: `${receiver.url}/callback/${taskId}`, callback_token: secret(), timeout_seconds: 300,
    }),
  });
  await answer.arrayBuffer();
  countStatus(posts, answer.status);
  return { taskId, t0, warm };
}

/** When the agent checked in: its report (process engine), or its first progress after the check-in (Podman). */
async function checkedInAt(server, receiver, task) {
  await receiver.waitFor(task.taskId, 'callback');
  const view = await (await fetch(`${server.url}/tasks/${task.taskId}`, { headers: { 'x-api-key': server.apiKey } })).json();
  countStatus(finals, receiver.events.get(task.taskId).finalStatus);
  if (task.warm && !view.data.warm) misses += 1;
  if (server.engine === 'process') return receiver.events.get(task.taskId).checkedIn;
  return Date.parse(view.data.progress.updated_at);
}

/** `count` tasks posted open-loop at `rate` a second; the start times (ms) of each. */
async function paced(server, receiver, count, warm) {
  const tasks = [];
  const started = now();
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / rate;
    if (due > now()) await sleep(due - now());
    tasks.push(createTask(server, receiver, { warm }));
  }
  const created = await Promise.all(tasks);
  const latencies = await Promise.all(created.map(async (task) => (await checkedInAt(server, receiver, task)) - task.t0));
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) };
}

async function idleOf(server) {
  const answer = await fetch(`${server.url}/ready`).then((r) => r.json(), () => null);
  return answer?.details?.warm_pools?.pools?.bench?.idle ?? 0;
}

async function waitFull(server, timeoutMs = 120_000) {
  const until = Date.now() + timeoutMs;
  while ((await idleOf(server)) < poolSize) {
    if (Date.now() > until) throw new Error(`the pool did not refill to ${poolSize} within ${timeoutMs / 1000} s`);
    await sleep(20);
  }
}

/** The pool drained at once, until it is full again; then as many cold tasks at once, until the last check-in. */
async function refill(server, receiver) {
  await waitFull(server);
  const t0 = now();
  const drained = await Promise.all(Array.from({ length: poolSize }, () => createTask(server, receiver, { warm: true })));
  await waitFull(server);
  const refillMs = now() - t0;
  await Promise.all(drained.map((task) => checkedInAt(server, receiver, task)));
  const c0 = now();
  const cold = await Promise.all(Array.from({ length: poolSize }, () => createTask(server, receiver, { warm: false })));
  const checkins = await Promise.all(cold.map((task) => checkedInAt(server, receiver, task)));
  return { refillMs, coldMs: Math.max(...checkins) - c0 };
}

async function bootDispatcher(engine, services, db, work) {
  const spec = ENGINES[engine];
  const port = await freePort();
  const apiKey = secret();
  const url = `http://127.0.0.1:${port}`;
  const pools = [{ name: 'bench', image: spec.image, backend: 'local', size: poolSize, resources: spec.pool }];
  const server = await bootServer({
    ...services.env, ROLE: 'dispatcher', NODE_ENV: 'development', DATA_DIR: path.join(work, engine), DATABASE_URL: db.url,
    DISPATCHER_PORT: String(port), API_KEY: apiKey, AGENT_KEY: secret(), DATABASE_POOL_SIZE: '4', MAX_CONCURRENT_TASKS: '200', DISPATCHER_NAME: `bench-warm-${engine}`,
    WARM_POOLS: JSON.stringify(pools), ...spec.env,
  }, `${url}/health`);
  return { ...server, url, apiKey, engine };
}

const ms = (value) => `${value.toFixed(1)} ms`;

async function benchEngine(engine, services, work, receiver) {
  const db = await database();
  let server;
  try {
    if (!db.url) throw new Error('bench-warm needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    server = await bootDispatcher(engine, services, db, work);
    const count = ENGINES[engine].tasks;
    console.log(`\n${engine}: ${ENGINES[engine].describe}; pool of ${poolSize}; ${count} tasks a run at ${rate}/s`);
    await waitFull(server);
    const run = (warm) => async () => {
      await waitFull(server);
      const figures = await paced(server, receiver, count, warm);
      console.log(`  ${warm ? 'warm' : 'cold'}: POST to check-in p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)}, max ${ms(figures.max)}`);
      return figures;
    };
    const { runs, baselines, ratios } = await interleaved(rounds, run(false), run(true));
    const { refillMs, coldMs } = await refill(server, receiver);
    console.log(`  over ${rounds} warm runs, each between two cold runs: warm p50 ${spread(runs.map((r) => r.p50), ms)}, p99 ${spread(runs.map((r) => r.p99), ms)}`);
    console.log(`  cold p50 ${spread(baselines.map((r) => r.p50), ms)}, p99 ${spread(baselines.map((r) => r.p99), ms)}; warm p50 over the cold beside it ${spread(ratios((r) => r.p50), (v) => `${v.toFixed(3)}x`)}`);
    console.log(`  refill: a pool of ${poolSize} drained at once was full again in ${ms(refillMs)}; ${poolSize} cold starts at once took ${ms(coldMs)} to the last check-in`);
    const p50 = median(runs.map((r) => r.p50));
    const p99 = median(runs.map((r) => r.p99));
    const coldP50 = median(baselines.map((r) => r.p50));
    emitFigure({ figure: `warm start (${engine}): POST /tasks to check-in at ${rate}/s, p50`, value: ms(p50), baseline: `${ms(coldP50)} cold`, ratio: `${median(ratios((r) => r.p50)).toFixed(3)}x`, target: 'p50 < 30 ms', met: p50 < 30 });
    emitFigure({ figure: `warm start (${engine}): POST /tasks to check-in at ${rate}/s, p99`, value: ms(p99), baseline: `${ms(median(baselines.map((r) => r.p99)))} cold`, ratio: `${(p99 / median(baselines.map((r) => r.p99))).toFixed(3)}x`, target: 'p99 < 150 ms', met: p99 < 150 });
    emitFigure({ figure: `warm pool refill (${engine}): ${poolSize} drained at once`, value: ms(refillMs), baseline: `${ms(coldMs)} for ${poolSize} cold starts`, ratio: `${(refillMs / coldMs).toFixed(2)}x`, target: 'within the cold starts\' time', met: refillMs <= coldMs });
  } finally {
    await server?.stop();
    await db.drop();
  }
}

async function main() {
  const receiver = await startReceiver();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-warm-'));
  let services;
  try {
    services = await productionServices();
    premises(services.statement, 'PostgreSQL (local, a fresh database per engine)', 'consumer: the dispatcher role itself; callbacks to a receiver on loopback standing for the controller');
    console.log(`load average at start: ${loadavg().map((load) => load.toFixed(2)).join(', ')}`);
    for (const engine of engines) await benchEngine(engine, services, work, receiver);
    console.log(`\nPOST /tasks answers: ${tally(posts)}; callbacks: ${tally(finals)}; warm tasks that started cold: ${misses}`);
    console.log(`load average at end: ${loadavg().map((load) => load.toFixed(2)).join(', ')}`);
    requireStatuses('POST /tasks', posts, [201]);
    requireStatuses('task callbacks', finals, ['completed']);
    if (misses > 0) process.exitCode = 1;
  } finally {
    await services?.stop();
    await receiver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
