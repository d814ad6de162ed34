#!/usr/bin/env node
// Server CPU per task life in the `all` role (issue 23, item 1), measured as the issue measured
// the 47 ms it started from: tasks posted by 16 clients at once to the all-in-one server
// (process engine, MAX_CONCURRENT_TASKS 64, the shell agent of bench-pipeline C), here 1,000
// of them as its done-when asks. Each run boots the server on a fresh database, runs one task
// so the spawner is up and every path has run once, lets it settle, reads the server
// process's CPU time (user + system, /proc/<pid>/stat), posts the tasks, waits until every one
// is `completed` at the controller and the callbacks and logs have settled, and reads the CPU
// time again: (after - before) / N, boot excluded. The wait reads the tasks' states from the
// database, so the server spends nothing on it. The process spawner (a process of its own) is
// reported beside it.
// Baseline, interleaved (floor, run, floor, ..., floor): the bare spawner floor in a process of
// its own, a node:http server that spawns the same agent N times, as many at once as the
// server's dispatcher runs, and answers its check-in and check-back with nothing stored; its
// CPU per task is measured the same way.
// Beside the figure, not part of it: what waking an idle Node process costs this machine, and
// the same server and floor once more with the tasks paced at BENCH_CPU_RATE (10) a second. On
// a machine whose cores go cold while a process sleeps, a task life's steps spread over 100 ms
// cost more than the same steps back to back: the paced run holds that cost, the burst does
// not. BENCH_CPU_PACED=0 leaves the paced pair out.
//
//   BENCH_CPU_TASKS=1000 BENCH_CPU_ROUNDS=3 BENCH_CPU_MAX_CONCURRENT=64 BENCH_CPU_CLIENTS=16 BENCH_CPU_RATE=10 BENCH_CPU_PACED=1
//   BENCH_CPU_COMPARE_MAIN=<checkout>/dist/src/main.js also runs another build each round (before this one in even rounds, after it in odd ones).
//   BENCH_SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' profiles the server (boot included in the file).
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';
import pg from 'pg';
import {
  allInOneConsumer, BENCH_AGENT_COMMAND, BENCH_AGENT_IMAGE, bootAllInOne, countStatus, cpuMs, database, emitFigure, interleaved, median, mergeStatuses,
  premises, productionServices, requireStatuses, root, runBenchScript, spread, tally,
} from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
// 1,000 task lives, as the figure is defined: over 200, much of the code a task runs once had not yet
// been optimised by V8, and the figure read about a quarter above the server's steady state.
const taskCount = env('BENCH_CPU_TASKS', 1000);
const pacedRate = env('BENCH_CPU_RATE', 10);
const rounds = env('BENCH_CPU_ROUNDS', process.env.BENCH_ROUNDS ?? 3);
const maxConcurrent = env('BENCH_CPU_MAX_CONCURRENT', 64);
const clients = env('BENCH_CPU_CLIENTS', 16);
const paced = process.env.BENCH_CPU_PACED !== '0';
/** How a run posts its tasks, `rate` a second (open loop; at most `clients` at once): the burst every one at once. */
const BURST = { rate: Infinity, name: 'burst' };
const PACED = { rate: pacedRate, name: `paced at ${pacedRate}/s` };
const AGENT = BENCH_AGENT_COMMAND.split(' ');
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

/** The process spawner started for `dataDir`, if one runs. */
function spawnerPid(dataDir) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('process-spawner') && cmdline.includes(dataDir)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function request(agent, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const bodyHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = http.request({ hostname: target.hostname, port: target.port, path: target.pathname + target.search, method, headers: { ...bodyHeaders, ...headers }, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const taskBody = (index) => JSON.stringify({
  agent_image: BENCH_AGENT_IMAGE, runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '128Mi' },
  timeout_seconds: 300, brief: { bench: 'cpu', n: index, prompt: 'Summarise the pull request and list the risky changes.' },
});

/** One run: boot, settle, N tasks paced, all completed, settle, CPU per task. */
async function serverRun(services, work, round, main, { rate, name } = BURST) {
  const db = await database();
  if (!db.url) throw new Error('bench-task-cpu needs local PostgreSQL (127.0.0.1:5432, user postgres)');
  const dataDir = path.join(work, `${main ? 'compare' : 'run'}-${round}`);
  const label = `${main ? 'compared build' : 'run'}${rate === Infinity ? '' : `, ${name}`}`;
  // `clients` connections at most, as issue 23's burst posts (a paced run never has that many requests open).
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const states = new pg.Pool({ connectionString: db.url, max: 1 });
  let server;
  try {
    server = await bootAllInOne({ services, databaseUrl: db.url, dataDir, maxConcurrent, main });
    const headers = { authorization: `Token ${server.token}` };
    // One task first, so the spawner is up and every code path has run once (lazy imports, JIT).
    const warm = JSON.parse((await request(agent, `${server.controller}/api/v1/tasks/`, { method: 'POST', headers, body: taskBody(-1) })).text);
    while (JSON.parse((await request(agent, `${server.controller}/api/v1/tasks/${warm.guid}/`, { headers })).text).status !== 'completed') await sleep(200);
    await sleep(3000);
    const pid = server.child.pid;
    const spawner = spawnerPid(dataDir);
    const before = { server: cpuMs(pid), spawner: spawner ? cpuMs(spawner) : 0 };
    const started = performance.now();
    const statuses = new Map();
    const guids = [];
    await Promise.all(Array.from({ length: taskCount }, async (_, index) => {
      await sleep(Math.max(0, started + (index * 1000) / rate - performance.now()));
      const answer = await request(agent, `${server.controller}/api/v1/tasks/`, { method: 'POST', headers, body: taskBody(index) }).catch((error) => ({ status: `error ${error.code}` }));
      countStatus(statuses, answer.status);
      if (answer.status === 201) guids.push(JSON.parse(answer.text).guid);
    }));
    // Wait: the tasks' states read from the database once a second, until all are final.
    const finals = new Map();
    const failures = [];
    for (const deadline = Date.now() + 300_000; Date.now() < deadline;) {
      const { rows } = await states.query(`SELECT status, count(*)::int AS n, min(guid::text || ' ' || coalesce(error_message, '')) FILTER (WHERE status <> 'completed') AS failure
        FROM controller.tasks WHERE guid = ANY($1::uuid[]) GROUP BY status`, [guids]);
      finals.clear();
      failures.length = 0;
      for (const row of rows) {
        finals.set(row.status, row.n);
        if (row.failure) failures.push(`${row.status}: ${row.failure}`);
      }
      if (['completed', 'failed', 'timed_out', 'cancelled'].reduce((n, status) => n + (finals.get(status) ?? 0), 0) >= guids.length) break;
      await sleep(1000);
    }
    // Callbacks, logs and events settle after the last final state.
    await sleep(3000);
    const after = { server: cpuMs(pid), spawner: spawner ? cpuMs(spawner) : 0 };
    const seconds = (performance.now() - started) / 1000;
    const run = {
      statuses, finals, seconds,
      perTask: (after.server - before.server) / taskCount,
      spawnerPerTask: (after.spawner - before.spawner) / taskCount,
    };
    console.log(`   ${label}: server ${run.perTask.toFixed(2)} ms CPU per task (${(after.server - before.server).toFixed(0)} ms over ${seconds.toFixed(1)} s); spawner ${run.spawnerPerTask.toFixed(2)} ms per task; POSTs ${tally(statuses)}; final ${tally(finals)}`);
    for (const failure of failures.slice(0, 5)) console.log(`   not completed: ${failure}`);
    return run;
  } finally {
    agent.destroy();
    await states.end();
    await server?.stop();
    await db.drop();
  }
}

/** The floor's process: bare server + spawns (BENCH_CPU_FLOOR_RATE a second, all at once when unset), reports its own CPU per task. */
async function floorProcess() {
  const rate = Number(process.env.BENCH_CPU_FLOOR_RATE ?? Infinity);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  const exits = new Map();
  // As many agents at once as the server's dispatcher runs (MAX_CONCURRENT_TASKS).
  const slot = pLimit(maxConcurrent);
  const before = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: taskCount }, async (_, index) => {
    await sleep(Math.max(0, started + (index * 1000) / rate - performance.now()));
    await slot(async () => {
      const child = spawn(AGENT[0], AGENT.slice(1), {
        cwd: root, stdio: 'ignore',
        env: { PATH: process.env.PATH, TASK_ID: `bare-${index}`, DISPATCHER_URL: `http://127.0.0.1:${port}`, AGENT_KEY: 'k' },
      });
      countStatus(exits, await new Promise((resolve) => child.once('exit', resolve)));
    });
  }));
  const used = process.cpuUsage(before);
  server.close();
  process.send({ perTask: (used.user + used.system) / 1000 / taskCount, exits: [...exits] });
}

async function floorRun({ rate, name } = BURST) {
  const env = { ...process.env, BENCH_CPU_FLOOR_RATE: String(rate) };
  const child = fork(fileURLToPath(import.meta.url), ['--baseline-server'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  const result = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the floor exited with ${code}`)));
  });
  child.disconnect();
  console.log(`   floor${rate === Infinity ? '' : `, ${name}`}: ${result.perTask.toFixed(2)} ms CPU per task; agent exit codes ${tally(new Map(result.exits))}`);
  return { perTask: result.perTask, exits: new Map(result.exits) };
}

/**
 * What waking an idle Node process costs this machine, in µs of CPU (user + system, every
 * thread): a bare process that sleeps on a timer and wakes, 300 times after 1 ms asleep and
 * 300 times after 20 ms. Where the two differ, work done in steps with idle time between them
 * costs more than the same work back to back.
 */
function wakeCost() {
  const probe = `const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const cost = async (gap) => { const before = process.cpuUsage(); for (let i = 0; i < 300; i++) await sleep(gap); const used = process.cpuUsage(before); return (used.user + used.system) / 300; };
    await sleep(100); const short = await cost(1); const long = await cost(20);
    console.log(JSON.stringify({ short, long }));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', probe], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the wake probe exited with ${code}`))));
  });
}

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-task-cpu-'));
  const services = await productionServices();
  try {
    const wake = await wakeCost();
    premises(
      services.statement, `consumer: ${allInOneConsumer(maxConcurrent)}`,
      `${taskCount} tasks per run posted at once by ${clients} clients (the floor: as many agents at once as the dispatcher runs), ${rounds} runs, each between two floor runs`,
      `this machine: an idle Node process spends ${wake.short.toFixed(0)} µs of CPU waking after 1 ms asleep, ${wake.long.toFixed(0)} µs after 20 ms`,
    );
    // BENCH_CPU_COMPARE_MAIN: another build's dist/src/main.js, run beside this one in each round:
    // before it in even rounds, after it in odd ones, so neither build is always a round's second
    // run (on a machine that warms up over a round, the second read up to 5% dearer).
    const compareMain = process.env.BENCH_CPU_COMPARE_MAIN;
    const compared = [];
    const result = await interleaved(rounds, () => floorRun(), async (round) => {
      if (!compareMain) return serverRun(services, work, round);
      if (round % 2 === 0) compared.push(await serverRun(services, work, round, compareMain));
      const run = await serverRun(services, work, round);
      if (round % 2 === 1) compared.push(await serverRun(services, work, round, compareMain));
      return run;
    });
    const ok = requireStatuses('POST /api/v1/tasks/', new Map(result.runs.flatMap((run) => [...run.statuses])), [201])
      & requireStatuses('final statuses', new Map(result.runs.flatMap((run) => [...run.finals])), ['completed'])
      & requireStatuses('floor agents (exit code)', new Map(result.baselines.flatMap((run) => [...run.exits])), [0]);
    const ms = (value) => `${value.toFixed(2)} ms`;
    console.log(`server CPU per task life: ${spread(result.runs.map((run) => run.perTask), ms)}; spawner ${spread(result.runs.map((run) => run.spawnerPerTask), ms)}`);
    console.log(`floor CPU per task (bare server + spawn): ${spread(result.baselines.map((run) => run.perTask), ms)}`);
    if (compareMain) {
      console.log(`compared build (${compareMain}) CPU per task life: ${spread(compared.map((run) => run.perTask), ms)}`);
      const sameRound = result.runs.map((run, i) => run.perTask / compared[i].perTask);
      // Each round's ratio carries the order it ran in; over rounds of both orders the geometric mean cancels it.
      const geometric = Math.exp(sameRound.reduce((sum, value) => sum + Math.log(value), 0) / sameRound.length);
      console.log(`this build over the compared one, same round: ${spread(sameRound, (value) => `${(100 * value).toFixed(0)}%`)}; geometric mean over both orders ${(100 * geometric).toFixed(1)}%`);
    }
    const ratios = result.ratios((run) => run.perTask);
    console.log(`server over the floor beside it: ${spread(ratios, (value) => `${value.toFixed(1)}x`)}`);
    const value = median(result.runs.map((run) => run.perTask));
    emitFigure({
      figure: 'server CPU per task life (all role, boot excluded)', value: ms(value),
      baseline: `${ms(median(result.baselines.map((run) => run.perTask)))} bare spawner floor`, ratio: `${median(ratios).toFixed(1)}x`,
      target: '<= 10 ms', met: Boolean(ok) && value <= 10,
    });
    if (paced) {
      console.log(`beside the figure, not part of it: the same ${taskCount} tasks ${PACED.name}, one run between two floor runs paced alike`);
      const before = await floorRun(PACED);
      const run = await serverRun(services, work, 'paced', undefined, PACED);
      const after = await floorRun(PACED);
      requireStatuses(`POST /api/v1/tasks/ ${PACED.name}`, run.statuses, [201]);
      requireStatuses(`final statuses ${PACED.name}`, run.finals, ['completed']);
      requireStatuses(`floor agents ${PACED.name} (exit code)`, mergeStatuses(before.exits, after.exits), [0]);
      const floor = (before.perTask + after.perTask) / 2;
      console.log(`   ${PACED.name}: server ${ms(run.perTask)} a task (${(run.perTask / floor).toFixed(1)}x the floor's ${ms(floor)}), against ${ms(value)} in the burst (the floor ${ms(median(result.baselines.map((baseline) => baseline.perTask)))})`);
    }
  } finally {
    await services.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main, floorProcess);
