#!/usr/bin/env node
// Start latency of the dispatcher role with LOCAL_ENGINE=process: how long from POST /tasks
// to its answer, to the agent's check-in being answered, and to the task's callback, for
// the smallest agent there is (scripts/bench-checkin-agent.mjs). The server runs as in
// production: LOG_LEVEL=info with its access log, s3rver, Redis; the dispatcher role is the
// consumer (it takes each task and runs its agent); the callbacks go to a receiver on loopback
// standing for the controller, which must get `completed` for every task (anything else, or a
// POST answered other than 201, fails the run). The baseline spawns that same agent bare with
// child_process, against a stub that answers at once, interleaved with the measured runs
// (bare, steady, bare, ...: BENCH_ROUNDS, 3, steady runs), so the figures read as the
// dispatcher's overhead beyond a bare spawn. "agent start" is when the agent's Node process
// began (scripts/bench-clock.mjs: every process of the run reads the machine's monotonic clock), which splits the wait into the dispatcher's part and the
// agent's own boot. GET /livez gives the HTTP floor, and the dispatcher's CPU time per task its
// cost whatever else loads the machine.
//  1. steady: BENCH_LANES clients (default one, so agents do not compete for the CPU with
//     each other), each posting a task and waiting for its callback; BENCH_TASKS per run;
//  2. burst: BENCH_TASKS tasks posted at once, MAX_CONCURRENT_TASKS at a time.
// Median and spread over the rounds of each run's p50. Needs local PostgreSQL and Redis.
//
//   BENCH_TASKS=100 BENCH_ROUNDS=3 BENCH_LANES=1 BENCH_MAX_CONCURRENT=10
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { monotonicMs as now } from './bench-clock.mjs';
import { bootServer, countStatus, cpuMs, database, emitFigure, freePort, interleaved, median, percentile, premises, productionServices, requireStatuses, root, runBenchScript, secret, spread, tally } from './bench-lib.mjs';

const taskCount = Number(process.env.BENCH_TASKS ?? 100);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const lanes = Number(process.env.BENCH_LANES ?? 1);
const maxConcurrent = Number(process.env.BENCH_MAX_CONCURRENT ?? 10);
const AGENT = path.join('scripts', 'bench-checkin-agent.mjs');

/**
 * What the agents and the dispatcher call back: the agents' reports of their check-in, the
 * callbacks, and (for the bare spawn) a stand-in for the agent API that answers at once.
 */
async function startReceiver() {
  const waiters = new Map();
  const events = new Map();
  const event = (taskId) => events.get(taskId) ?? events.set(taskId, {}).get(taskId);
  const settle = (taskId) => {
    const waiter = waiters.get(taskId);
    if (waiter && event(taskId).callback) waiter();
  };
  const server = createServer((request, response) => {
    const arrived = now();
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      const url = request.url ?? '';
      if (url === '/agent/checkin') event(body.task_id).firstRequest = arrived;
      if (url === '/report') Object.assign(event(body.task_id), { checkedIn: body.t, processStarted: body.origin });
      const finished = url === '/agent/checkback' ? body.task_id : /^\/callback\/([0-9a-f-]{36})$/.exec(url)?.[1];
      if (finished) {
        Object.assign(event(finished), { callback: arrived, finalStatus: body.status ?? 'none' });
        settle(finished);
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"data":{"brief_key":"","env":{}}}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    events,
    done: (taskId) => new Promise((resolve) => {
      waiters.set(taskId, resolve);
      settle(taskId);
    }),
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

async function inLanes(count, width, work) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await work(next++);
  }));
}

const figures = (values) => `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`;

/** The agent spawned directly: spawn to its first request, and to its check-in answered. */
async function bareSpawn(receiver) {
  const started = new Map();
  await inLanes(taskCount, lanes, async () => {
    const taskId = randomUUID();
    const done = receiver.done(taskId);
    started.set(taskId, now());
    const child = spawn(process.execPath, [AGENT], {
      cwd: root,
      stdio: 'ignore',
      env: { PATH: process.env.PATH, TASK_ID: taskId, DISPATCHER_URL: receiver.url, AGENT_KEY: 'bare', BENCH_REPORT_URL: `${receiver.url}/report` },
    });
    await Promise.all([done, new Promise((resolve) => child.once('close', resolve))]);
  });
  const since = (key) => [...started].map(([taskId, t0]) => receiver.events.get(taskId)[key] - t0);
  console.log(`baseline, bare child_process.spawn of the same agent (${taskCount}, ${lanes} at a time):`);
  console.log(`  spawn to process start   ${figures(since('processStarted'))}`);
  console.log(`  spawn to first request   ${figures(since('firstRequest'))}`);
  console.log(`  spawn to check-in answer ${figures(since('checkedIn'))}`);
  return { checkinP50: percentile(since('checkedIn'), 50) };
}

async function createTask(dispatcher, apiKey, receiver) {
  const taskId = randomUUID();
  const t0 = now();
  const answer = await fetch(`${dispatcher}/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({
      task_id: taskId,
      agent_image: 'bench/checkin',
      runtime_target: { type: 'local', namespace: '' },
      env: { BENCH_REPORT_URL: `${receiver.url}/report` },
      callback_url: `${receiver.url}/callback/${taskId}`,
      callback_token: secret(),
      timeout_seconds: 300,
    }),
  });
  const body = await answer.json();
  if (answer.status !== 201) throw new Error(`POST /tasks answered ${answer.status}: ${JSON.stringify(body)}`);
  return { taskId, t0, answered: now() - t0 };
}

/** The callbacks' statuses, over every task the dispatcher ran. */
const finals = new Map();

function report(title, tasks, receiver, seconds, cpu) {
  const since = (key) => tasks.map((task) => receiver.events.get(task.taskId)[key] - task.t0);
  for (const task of tasks) countStatus(finals, receiver.events.get(task.taskId).finalStatus);
  console.log(title);
  console.log(`  POST answer          ${figures(tasks.map((task) => task.answered))}`);
  console.log(`  POST to agent start  ${figures(since('processStarted'))}`);
  console.log(`  POST to check-in     ${figures(since('checkedIn'))}`);
  console.log(`  POST to callback     ${figures(since('callback'))}`);
  console.log(`  ${tasks.length} tasks in ${seconds.toFixed(1)} s (${(tasks.length / seconds).toFixed(1)} tasks/s); dispatcher CPU ${(cpu / tasks.length).toFixed(1)} ms/task`);
  return { checkinP50: percentile(since('checkedIn'), 50), callbackP50: percentile(since('callback'), 50), cpuPerTask: cpu / tasks.length };
}

/** The same client's plainest request to the same server: what any answer costs here, for scale. */
async function httpFloor(dispatcher) {
  const latencies = [];
  await inLanes(taskCount, lanes, async () => {
    const t0 = now();
    const answer = await fetch(`${dispatcher}/livez`);
    await answer.arrayBuffer();
    if (answer.status !== 200) throw new Error(`GET /livez answered ${answer.status}`);
    latencies.push(now() - t0);
  });
  console.log(`  GET /livez (HTTP floor, ${lanes} at a time) ${figures(latencies)}`);
}

async function steady(dispatcher, apiKey, receiver, pid) {
  const tasks = [];
  const started = now();
  const cpu = cpuMs(pid);
  await inLanes(taskCount, lanes, async () => {
    const task = await createTask(dispatcher, apiKey, receiver);
    tasks.push(task);
    await receiver.done(task.taskId);
  });
  return report(`dispatcher, steady: ${lanes} clients each posting a task and awaiting its callback`, tasks, receiver, (now() - started) / 1000, cpuMs(pid) - cpu);
}

async function burst(dispatcher, apiKey, receiver, pid) {
  const started = now();
  const cpu = cpuMs(pid);
  const tasks = await Promise.all(Array.from({ length: taskCount }, () => createTask(dispatcher, apiKey, receiver)));
  await Promise.all(tasks.map((task) => receiver.done(task.taskId)));
  report(`dispatcher, burst: ${taskCount} tasks posted at once, MAX_CONCURRENT_TASKS=${maxConcurrent}`, tasks, receiver, (now() - started) / 1000, cpuMs(pid) - cpu);
}

async function main() {
  const receiver = await startReceiver();
  const db = await database();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-dispatcher-'));
  const port = await freePort();
  const dispatcher = `http://127.0.0.1:${port}`;
  const apiKey = secret();
  let server;
  let services;
  try {
    if (!db.url) throw new Error('bench-dispatcher-start needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    services = await productionServices();
    premises(services.statement, 'PostgreSQL (local, a fresh database)', `consumer: the dispatcher role itself (LOCAL_ENGINE=process, bench/checkin -> node ${AGENT}, MAX_CONCURRENT_TASKS=${maxConcurrent}); callbacks to a receiver on loopback standing for the controller`);
    console.log(`load average at start: ${loadavg().map((load) => load.toFixed(2)).join(', ')}`);
    server = await bootServer(
      {
        ...services.env, ROLE: 'dispatcher', NODE_ENV: 'development', DATA_DIR: path.join(work, 'data'), DATABASE_URL: db.url,
        DISPATCHER_PORT: String(port), API_KEY: apiKey, AGENT_KEY: secret(), LOCAL_ENGINE: 'process',
        LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'bench/checkin': `node ${AGENT}` }),
        MAX_CONCURRENT_TASKS: String(maxConcurrent),
      },
      `${dispatcher}/health`,
    );
    await httpFloor(dispatcher);
    const { runs, baselines, ratios } = await interleaved(rounds, () => bareSpawn(receiver), () => steady(dispatcher, apiKey, receiver, server.child.pid));
    await burst(dispatcher, apiKey, receiver, server.child.pid);
    const ms = (value) => `${value.toFixed(1)} ms`;
    console.log(`over ${rounds} steady runs, each between two bare-spawn runs (each run's p50):`);
    console.log(`  POST to check-in answered ${spread(runs.map((r) => r.checkinP50), ms)}; bare spawn to check-in answered ${spread(baselines.map((r) => r.checkinP50), ms)}`);
    const overhead = ratios((r) => r.checkinP50);
    console.log(`  POST to check-in over the bare spawns beside it ${spread(overhead, (v) => `${v.toFixed(2)}x`)}; POST to callback ${spread(runs.map((r) => r.callbackP50), ms)}; dispatcher CPU per task ${spread(runs.map((r) => r.cpuPerTask), ms)}`);
    console.log(`  callbacks received: ${tally(finals)}`);
    const completed = requireStatuses('task callbacks', finals, ['completed']);
    emitFigure({
      figure: 'dispatcher start: POST /tasks to agent check-in, p50', value: ms(median(runs.map((r) => r.checkinP50))),
      baseline: `${ms(median(baselines.map((r) => r.checkinP50)))} bare spawn`, ratio: `${median(overhead).toFixed(2)}x`,
      target: 'none (the overhead beyond a bare spawn, shown); every task completed', met: completed,
    });
  } finally {
    await server?.stop();
    await services?.stop();
    await db.drop();
    await receiver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
