#!/usr/bin/env node
// Warm pools against cold starts, in the same run, on the process engine and on Podman (the
// docker engine): the dispatcher role as production runs it (LOG_LEVEL=info, s3rver, Redis,
// local PostgreSQL), tasks posted open-loop at BENCH_RATE (20) a second.
//  - start: POST /tasks to the agent's check-in. Process engine: the check-in answer as the
//    agent reports it (scripts/bench-warm-agent.mjs, an agent written with the SDK, claiming first when
//    warm). Podman: the shell-warm image cannot report, so the time is the dispatcher's own
//    record of the check-in (its `Agent checked in` log line, stamped when the check-in moved
//    the task to running, on the same clock as the bench).
//    Warm runs fit the pool (WARM_POOLS, size BENCH_POOL_SIZE, 20; a run posts as many tasks as
//    the pool holds, so each claim meets an idle agent: tasks beyond it would wait for a
//    replacement's boot, which the refill figure measures); cold runs ask for more CPU
//    than the pool gives, so they start cold with the same agent. Cold, warm, cold, ... runs
//    (BENCH_ROUNDS, 3, warm runs), each warm run beside the cold runs before and after it. Each
//    run starts with the pool full and, on Podman, the containers of the runs before it removed.
//  - refill: the pool drained at once (BENCH_POOL_SIZE tasks posted together) until it is full
//    again (every drained task given to an agent and as many others idle and ready, as /ready
//    counts them), at the moment the last replacement asked for its claim as PostgreSQL stamped
//    it, against the same number of cold tasks posted together until the last one checked in.
//    On the process engine both windows hold their agents at work until they are measured (the
//    receiver answers their check-in reports then), so neither holds task ends (holdsAtWork).
//    BENCH_REFILL_ROUNDS (3) drains, each between two cold bursts; the figure is the median of
//    each drain over the mean of the cold bursts beside it, printed with its spread.
//    BENCH_REFILL_STAGES=1 prints each drain's stages (claims and replacements recorded, the
//    replacements' first claims) and the CPU the whole machine spent over each window.
// Every POST must answer 201, every callback `completed`, every warm task run warm (else exit 1).
//
//   BENCH_RATE=20 BENCH_TASKS=20 BENCH_PODMAN_TASKS=20 BENCH_ROUNDS=3 BENCH_POOL_SIZE=20 BENCH_REFILL_ROUNDS=3 BENCH_WARM_ENGINES=process,docker
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { monotonicMs as now, wallMinusMonotonicMs } from './bench-clock.mjs';
import { bootAllInOne, bootServer, countStatus, loadKubeApiServer, root, database, emitFigure, freePort, interleaved, median, percentile, premises, productionServices, requireStatuses, runBenchScript, secret, spread, tally } from './bench-lib.mjs';

const rate = Number(process.env.BENCH_RATE ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const poolSize = Number(process.env.BENCH_POOL_SIZE ?? 20);
/** Drains of the full pool, each between two cold bursts of as many tasks (cold, drain, cold, ..., cold). */
const refillRounds = Number(process.env.BENCH_REFILL_ROUNDS ?? 3);
const engines = (process.env.BENCH_WARM_ENGINES ?? 'process,docker,controller,kubernetes').split(',').map((name) => name.trim());
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const AGENT = path.join('scripts', 'bench-warm-agent.mjs');
// BENCH_WARM_MAIN: another build's dist/src/main.js to measure (its checkout is then the server's root), as a before figure.
const otherMain = process.env.BENCH_WARM_MAIN;
const serverRoot = otherMain ? path.resolve(path.dirname(otherMain), '../..') : root;
const SHELL_WARM = 'localhost/agent-examples/shell-warm:latest';

const ENGINES = {
  process: {
    tasks: Number(process.env.BENCH_TASKS ?? poolSize),
    image: 'bench/warm',
    pool: { cpu: '1', memory: '256Mi' },
    env: { LOCAL_ENGINE: 'process', LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'bench/warm': `node ${AGENT}` }) },
    describe: `LOCAL_ENGINE=process, bench/warm -> node ${AGENT}; start measured to the agent's check-in answer`,
  },
  docker: {
    tasks: Number(process.env.BENCH_PODMAN_TASKS ?? poolSize),
    image: SHELL_WARM,
    pool: { cpu: '500m', memory: '64Mi' },
    env: { LOCAL_ENGINE: 'docker', DOCKER_HOST: process.env.DOCKER_HOST ?? 'unix:///tmp/atc-podman/podman.sock' },
    describe: `LOCAL_ENGINE=docker on Podman, ${SHELL_WARM}; start measured to the check-in as the dispatcher records it`,
  },
};

/** The agents' check-in reports and the callbacks, by task. */
async function startReceiver() {
  const events = new Map();
  const waiters = new Map();
  /** Tasks whose agents' reports are answered only at `release`: by task, the answer once the report came. */
  const held = new Map();
  const event = (taskId) => events.get(taskId) ?? events.set(taskId, {}).get(taskId);
  const server = createServer((request, response) => {
    const arrived = now();
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      if (request.url === '/report') {
        Object.assign(event(body.task_id), { checkedIn: body.t, claimed: body.claimed, mainThread: body.main_thread, claimThread: body.claim_thread });
        waiters.get(`${body.task_id}/report`)?.();
        // A held agent stays at work (waiting for this answer) until its burst is measured.
        const hold = held.get(body.task_id);
        if (hold) {
          hold.answer = () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          return;
        }
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
  const hold = (taskId) => held.set(taskId, {});
  const release = (taskIds) => {
    for (const taskId of taskIds) {
      held.get(taskId)?.answer?.();
      held.delete(taskId);
    }
  };
  return { url: `http://127.0.0.1:${server.address().port}`, events, waitFor, hold, release, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
}

const posts = new Map();
const finals = new Map();
let misses = 0;

async function createTask(server, receiver, { warm, hold = false }) {
  const taskId = randomUUID();
  if (hold) receiver.hold(taskId);
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

/** When the agent checked in: its report (process engine), or the dispatcher's record of the check-in (Podman). */
async function checkedInAt(server, receiver, task) {
  await receiver.waitFor(task.taskId, 'callback');
  const view = await (await fetch(`${server.url}/tasks/${task.taskId}`, { headers: { 'x-api-key': server.apiKey } })).json();
  countStatus(finals, receiver.events.get(task.taskId).finalStatus);
  if (task.warm && !view.data.warm) misses += 1;
  if (server.engine === 'process') return receiver.events.get(task.taskId).checkedIn;
  return checkinLogged(server.logFile, task.taskId);
}

/** The time of the dispatcher's `Agent checked in` line for the task (pino's `time`, ISO with milliseconds). */
async function checkinLogged(logFile, taskId) {
  for (let attempt = 0; attempt < 50; attempt++) {
    // The server writes its log in blocks, at most 100 ms late.
    const line = readFileSync(logFile, 'utf8').split('\n').find((candidate) => candidate.includes(taskId) && candidate.includes('"msg":"Agent checked in"'));
    // pino stamps the wall clock; the bench reads the monotonic one.
    if (line) return Date.parse(JSON.parse(line).time) - wallMinusMonotonicMs();
    await sleep(50);
  }
  throw new Error(`the dispatcher logged no check-in of task ${taskId}`);
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
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), tasks: created.map((task) => ({ guid: task.taskId, t0: task.t0 })) };
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

/**
 * Until the runs before are done with: the dispatcher removes an agent's container
 * AGENT_EXIT_GRACE_MS (15 s) after its check-back, and twenty removals on Podman take both cores
 * for a second or more, so a run that met them measured the one before it. Waits, on the docker
 * engine, until the dispatcher's only containers are its idle pool's. The process engine's ended
 * agents have nothing left to remove.
 */
async function waitQuiet(server, timeoutMs = 60_000) {
  if (server.engine !== 'docker') return;
  for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(250)) {
    if ((await containersOf(`bench-warm-${server.engine}`)).length <= poolSize) return;
  }
  throw new Error(`the containers of earlier runs were not removed within ${timeoutMs / 1000} s`);
}

/**
 * When the pool, drained of the tasks `taskIds`, was full again: each of them given to an agent
 * and `poolSize` others idle and ready (what /ready counts), at the moment PostgreSQL stamped the
 * last of those ready (its first claim), on the bench's clock. Asked of the database every 100 ms:
 * polling /ready (a runtime ping and a count each) or each task's view as fast as this needs
 * would load the server the refill is measured on.
 */
async function fullAgainAt(databaseUrl, taskIds, t0, timeoutMs = 120_000) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(100)) {
      const { rows: [row] } = await client.query(
        `SELECT count(*) FILTER (WHERE task_id = ANY($1::uuid[]))::int AS given,
                count(*) FILTER (WHERE state = 'idle' AND ready_at IS NOT NULL)::int AS idle,
                extract(epoch FROM max(ready_at) FILTER (WHERE state = 'idle')) * 1000 AS last_ready
           FROM dispatcher.pool_agents WHERE state <> 'gone' OR task_id = ANY($1::uuid[])`,
        [taskIds],
      );
      if (row.given === taskIds.length && row.idle >= poolSize) {
        if (stagesWanted) {
          const { rows: [stages] } = await client.query(
            `SELECT extract(epoch FROM max(claimed_at) FILTER (WHERE task_id = ANY($1::uuid[]))) * 1000 AS last_given,
                    extract(epoch FROM min(created_at) FILTER (WHERE state = 'idle')) * 1000 AS first_recorded,
                    extract(epoch FROM max(created_at) FILTER (WHERE state = 'idle')) * 1000 AS last_recorded,
                    extract(epoch FROM min(ready_at) FILTER (WHERE state = 'idle')) * 1000 AS first_ready,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ready_at)) FILTER (WHERE state = 'idle') * 1000 AS median_ready
               FROM dispatcher.pool_agents WHERE state <> 'gone' OR task_id = ANY($1::uuid[])`, [taskIds]);
          const at = (value) => `${(Number(value) - wallMinusMonotonicMs() - t0).toFixed(0)}`;
          console.log(`    drain stages from the POSTs, ms: last given ${at(stages.last_given)}, replacements recorded ${at(stages.first_recorded)} to ${at(stages.last_recorded)}, ready first ${at(stages.first_ready)}, median ${at(stages.median_ready)}, last ${at(row.last_ready)}`);
        }
        return Number(row.last_ready) - wallMinusMonotonicMs();
      }
    }
    throw new Error(`the pool did not refill to ${poolSize} within ${timeoutMs / 1000} s`);
  } finally {
    await client.end();
  }
}

/**
 * The machine's busy CPU time (every core, from /proc/stat, in ms) sampled every 50 ms while a
 * burst runs; `between(t0, t1)` answers the busy time from the sample before t0 to the one after
 * t1, so BENCH_REFILL_STAGES can print what a drain and a cold burst cost the machine in all.
 * Without BENCH_REFILL_STAGES nothing is sampled: the figures' runs carry no reads of the bench's own.
 */
function machineBusy() {
  if (!stagesWanted) return { stop: async () => undefined, between: () => 0 };
  const read = () => {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait, in USER_HZ (100) ticks.
    return (fields.slice(0, 8).reduce((sum, value) => sum + value, 0) - fields[3] - fields[4]) * 10;
  };
  const samples = [[now(), read()]];
  const timer = setInterval(() => samples.push([now(), read()]), 50);
  return {
    // A last sample after the window's end.
    stop: async () => {
      await sleep(100);
      clearInterval(timer);
    },
    between: (t0, t1) => {
      const before = samples.filter(([t]) => t <= t0).at(-1) ?? samples[0];
      const after = samples.find(([t]) => t >= t1) ?? samples.at(-1);
      return after[1] - before[1];
    },
  };
}

const stagesWanted = Boolean(process.env.BENCH_REFILL_STAGES);

/** The pool drained at once (its tasks posted together), until it is full again; its tasks checked in before it returns. */
async function drainedRefill(server, receiver, databaseUrl) {
  await waitQuiet(server);
  await waitFull(server);
  const busy = machineBusy();
  const t0 = now();
  const hold = holdsAtWork(server);
  const drained = await Promise.all(Array.from({ length: poolSize }, () => createTask(server, receiver, { warm: true, hold })));
  const refillMs = (await fullAgainAt(databaseUrl, drained.map((task) => task.taskId), t0)) - t0;
  receiver.release(drained.map((task) => task.taskId));
  await Promise.all(drained.map((task) => checkedInAt(server, receiver, task)));
  await busy.stop();
  if (stagesWanted) console.log(`    drain: ${ms(refillMs)}, the machine busy ${ms(busy.between(t0, t0 + refillMs))} of CPU over it (monotonic ${(t0 / 1000).toFixed(3)} to ${((t0 + refillMs) / 1000).toFixed(3)} s)`);
  return refillMs;
}

/**
 * Whether a burst's agents are held at work (their check-in reports answered only once the burst
 * is measured): in production an agent works for minutes, so a drain's tasks do not end while
 * their replacements boot, and neither a drain's window nor a cold burst's holds task ends. The
 * Podman image cannot report, so its agents end as soon as they checked in, in both windows.
 */
function holdsAtWork(server) {
  return server.engine === 'process';
}

/** As many cold tasks as the pool holds, posted together, until the last one checked in. */
async function coldBurst(server, receiver) {
  await waitQuiet(server);
  await waitFull(server);
  const busy = machineBusy();
  const c0 = now();
  const hold = holdsAtWork(server);
  const cold = await Promise.all(Array.from({ length: poolSize }, () => createTask(server, receiver, { warm: false, hold })));
  // Held agents check back only once the burst is measured: its window holds starts alone, as a drain's does.
  const checkins = hold
    ? await Promise.all(cold.map(async (task) => (await receiver.waitFor(task.taskId, 'report'), receiver.events.get(task.taskId).checkedIn)))
    : await Promise.all(cold.map((task) => checkedInAt(server, receiver, task)));
  const coldMs = Math.max(...checkins) - c0;
  receiver.release(cold.map((task) => task.taskId));
  if (hold) await Promise.all(cold.map((task) => checkedInAt(server, receiver, task)));
  await busy.stop();
  if (stagesWanted) console.log(`    cold burst: ${ms(coldMs)}, the machine busy ${ms(busy.between(c0, c0 + coldMs))} of CPU over it (monotonic ${(c0 / 1000).toFixed(3)} to ${((c0 + coldMs) / 1000).toFixed(3)} s)`);
  return coldMs;
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
  }, `${url}/health`, serverRoot);
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
      await waitQuiet(server);
      await waitFull(server);
      const figures = await paced(server, receiver, count, warm);
      console.log(`  ${warm ? 'warm' : 'cold'}: POST to check-in p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)}, max ${ms(figures.max)}`);
      if (warm && engine === 'process') console.log(`    ${await warmStages(db.url, figures, receiver, { controller: false })}`);
      return figures;
    };
    const { runs, baselines, ratios } = await interleaved(rounds, run(false), run(true));
    const refills = await interleaved(refillRounds, () => coldBurst(server, receiver), () => drainedRefill(server, receiver, db.url));
    const refillMs = median(refills.runs);
    const coldMs = median(refills.baselines);
    const refillRatio = median(refills.ratios((value) => value));
    console.log(`  over ${rounds} warm runs, each between two cold runs: warm p50 ${spread(runs.map((r) => r.p50), ms)}, p99 ${spread(runs.map((r) => r.p99), ms)}`);
    console.log(`  cold p50 ${spread(baselines.map((r) => r.p50), ms)}, p99 ${spread(baselines.map((r) => r.p99), ms)}; warm p50 over the cold beside it ${spread(ratios((r) => r.p50), (v) => `${v.toFixed(3)}x`)}`);
    console.log(`  refill (${refillRounds} drains, each between two cold bursts): a pool of ${poolSize} drained at once was full again in ${spread(refills.runs, ms)}; ${poolSize} cold starts at once took ${spread(refills.baselines, ms)} to the last check-in; refill over the cold bursts beside it ${spread(refills.ratios((value) => value), (v) => `${v.toFixed(2)}x`)}`);
    const p50 = median(runs.map((r) => r.p50));
    const p99 = median(runs.map((r) => r.p99));
    const coldP50 = median(baselines.map((r) => r.p50));
    emitFigure({ figure: `warm start (${engine}): POST /tasks to check-in at ${rate}/s, p50`, value: ms(p50), baseline: `${ms(coldP50)} cold`, ratio: `${median(ratios((r) => r.p50)).toFixed(3)}x`, target: 'p50 < 30 ms', met: p50 < 30 });
    emitFigure({ figure: `warm start (${engine}): POST /tasks to check-in at ${rate}/s, p99`, value: ms(p99), baseline: `${ms(median(baselines.map((r) => r.p99)))} cold`, ratio: `${(p99 / median(baselines.map((r) => r.p99))).toFixed(3)}x`, target: 'p99 < 150 ms', met: p99 < 150 });
    emitFigure({ figure: `warm pool refill (${engine}): ${poolSize} drained at once`, value: ms(refillMs), baseline: `${ms(coldMs)} for ${poolSize} cold starts`, ratio: `${refillRatio.toFixed(2)}x`, target: 'within the cold starts\' time', met: refillRatio <= 1 });
  } finally {
    await server?.stop();
    if (engine === 'docker') await removeContainers(`bench-warm-${engine}`);
    await db.drop();
  }
}

let engineClient;
/** One Docker API client for the bench's own looks at Podman, made when first needed. */
const podman = () => (engineClient ??= new (createRequire(import.meta.url)('dockerode'))({ socketPath: ENGINES.docker.env.DOCKER_HOST.replace(/^unix:\/\//, '') }));

/** The containers, running or not, the dispatcher named `dispatcherName` manages. */
function containersOf(dispatcherName) {
  return podman().listContainers({ all: true, filters: { label: [`app.kubernetes.io/managed-by=${dispatcherName}`] } });
}

/** A stopped dispatcher keeps its pool's containers for its next start: the bench removes them itself. */
async function removeContainers(dispatcherName) {
  const left = await containersOf(dispatcherName);
  await Promise.all(left.map((container) => podman().getContainer(container.Id).remove({ force: true }).catch(() => undefined)));
}

const FORGE_SECRET = secret();
const controllerPosts = new Map();
const controllerFinals = new Map();

/** A signed forge push that the workflow of `repository` routes to a task. */
function forgePush(repository) {
  const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID(), repository: { full_name: repository }, pusher: { name: 'bench' } });
  const signature = `sha256=${createHmac('sha256', FORGE_SECRET).update(body).digest('hex')}`;
  return { body, headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature } };
}

/**
 * The controller's side: ROLE=all (controller and dispatcher in one process, as bench-lib boots
 * it) with the process engine's pool, tasks made by POST /api/v1/tasks/ or by a signed forge push
 * that a workflow routes; start measured to the agent's check-in answer, as on the dispatcher.
 * Cold tasks (and the cold workflow) ask for more CPU than the pool gives.
 */
async function benchController(services, work, receiver) {
  const db = await database();
  let server;
  try {
    if (!db.url) throw new Error('bench-warm needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    const spec = ENGINES.process;
    server = await bootAllInOne({
      services, databaseUrl: db.url, dataDir: path.join(work, 'controller'), maxConcurrent: 200, main: otherMain, imageCommands: { [spec.image]: `node ${AGENT}` },
      env: { WARM_POOLS: JSON.stringify([{ name: 'bench', image: spec.image, backend: 'local', size: poolSize, resources: spec.pool }]), FORGE_WEBHOOK_SECRET: FORGE_SECRET, DATABASE_POOL_SIZE: '8' },
    });
    const headers = { authorization: `Token ${server.token}`, 'content-type': 'application/json' };
    const template = (warm) => ({
      agent_image: spec.image, runtime_target: { type: 'local', namespace: '' }, resources: warm ? spec.pool : { ...spec.pool, cpu: '2' },
      env: { BENCH_REPORT_URL: `${receiver.url}/report` }, timeout_seconds: 300,
    });
    for (const warm of [true, false]) {
      const workflow = { id: `bench-${warm ? 'warm' : 'cold'}`, triggers: [{ source: 'forge', event: 'push', filter: { 'repository.full_name': `bench/${warm ? 'warm' : 'cold'}` } }], task_template: { ...template(warm), brief: { after: '{{payload.after}}' } } };
      const created = await fetch(`${server.controller}/api/v1/workflows/`, { method: 'POST', headers, body: JSON.stringify(workflow) });
      if (created.status !== 201) throw new Error(`workflow not created: ${created.status} ${await created.text()}`);
    }
    const count = Number(process.env.BENCH_CONTROLLER_TASKS ?? 20);
    const ready = { url: server.dispatcher };
    const paths = {
      'POST /api/v1/tasks/': async (warm) => {
        const answer = await fetch(`${server.controller}/api/v1/tasks/`, { method: 'POST', headers, body: JSON.stringify({ ...template(warm), brief: { prompt: 'bench' } }) });
        countStatus(controllerPosts, answer.status);
        return (await answer.json()).guid;
      },
      'routed webhook': async (warm) => {
        const { body, headers: signed } = forgePush(`bench/${warm ? 'warm' : 'cold'}`);
        const answer = await fetch(`${server.controller}/api/v1/webhooks/`, { method: 'POST', headers: signed, body });
        countStatus(controllerPosts, answer.status);
        return (await answer.json()).task_guid;
      },
    };
    console.log(`\ncontroller: ROLE=all, LOCAL_ENGINE=process, ${spec.image} -> node ${AGENT}; start measured from the controller's POST to the agent's check-in answer; pool of ${poolSize}; ${count} tasks a run at ${rate}/s`);
    await waitFull(ready);
    for (const [name, post] of Object.entries(paths)) {
      const run = (warm) => async () => {
        await waitFull(ready);
        const figures = await pacedAt(count, async () => {
          const t0 = now();
          const guid = await post(warm);
          await receiver.waitFor(guid, 'report');
          return { guid, t0, latency: receiver.events.get(guid).checkedIn - t0 };
        });
        await finalsAt(server, headers, figures.guids);
        console.log(`  ${name}, ${warm ? 'warm' : 'cold'}: to check-in p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)}, max ${ms(figures.max)}`);
        if (warm) console.log(`    ${await warmStages(db.url, figures, receiver, { controller: true })}`);
        return figures;
      };
      const { runs, baselines } = await interleaved(rounds, run(false), run(true));
      const p50 = median(runs.map((r) => r.p50));
      const coldP50 = median(baselines.map((r) => r.p50));
      console.log(`  ${name}: warm p50 ${spread(runs.map((r) => r.p50), ms)}, p99 ${spread(runs.map((r) => r.p99), ms)}; cold p50 ${spread(baselines.map((r) => r.p50), ms)}`);
      emitFigure({ figure: `warm start (controller, ${name}): to check-in at ${rate}/s, p50`, value: ms(p50), baseline: `${ms(coldP50)} cold`, ratio: `${(p50 / coldP50).toFixed(3)}x`, target: 'p50 < 60 ms', met: p50 < 60 });
    }
  } finally {
    await server?.stop();
    await db.drop();
  }
}

/** `count` starts at `rate` a second, each `start()` answering its task's guid and latency. */
async function pacedAt(count, start) {
  const started = now();
  const pending = [];
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / rate;
    if (due > now()) await sleep(due - now());
    pending.push(start());
  }
  const done = await Promise.all(pending);
  const latencies = done.map((task) => task.latency);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), guids: done.map((task) => task.guid), tasks: done };
}

/**
 * Where a warm run's time went, each stage's median over its tasks (so they need not add up to
 * the total's): the bench's POST, the controller's task row (with `controller`), the
 * dispatcher's, the task claimed by its start loop, the task given to a pool agent (each row's
 * time as PostgreSQL stamped it, on the same clock: its statement's or transaction's start), the
 * agent's claim answer and its check-in answer (as it saw them), and what the agent's main
 * thread did between those two and over its claim's long poll: time on a core against time
 * runnable but waiting for one.
 */
async function warmStages(databaseUrl, figures, receiver, { controller }) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT d.task_id AS guid, ${controller ? 'extract(epoch FROM c.created_at) * 1000' : 'NULL'} AS stored, extract(epoch FROM d.created_at) * 1000 AS dispatcher,
              extract(epoch FROM p.claimed_at) * 1000 AS given, extract(epoch FROM d.started_at) * 1000 AS claimed
         FROM dispatcher.tasks d JOIN dispatcher.pool_agents p ON p.task_id = d.task_id
              ${controller ? 'JOIN controller.tasks c ON c.guid = d.task_id' : ''}
        WHERE d.task_id = ANY($1::uuid[])`,
      [figures.tasks.map((task) => task.guid)],
    );
    // PostgreSQL stamps the wall clock; the bench and its agents read the monotonic one.
    const offset = wallMinusMonotonicMs();
    const onClock = (stamp) => Number(stamp) - offset;
    const at = new Map(rows.map((row) => [row.guid, { stored: onClock(row.stored), dispatcher: onClock(row.dispatcher), given: onClock(row.given), claimed: onClock(row.claimed) }]));
    const stage = (of) => ms(percentile(figures.tasks.filter((task) => at.has(task.guid)).map((task) => of(task, at.get(task.guid), receiver.events.get(task.guid))), 50));
    const threads = figures.tasks.map((task) => receiver.events.get(task.guid).mainThread).filter(Boolean);
    const claimThreads = figures.tasks.map((task) => receiver.events.get(task.guid).claimThread).filter(Boolean);
    const thread = (threads.length ? `; the agent's main thread from claim to check-in answer: ${ms(percentile(threads.map((t) => t.on_core_ms), 50))} on a core, ${ms(percentile(threads.map((t) => t.waiting_ms), 50))} waiting for one` : '')
      + (claimThreads.length ? `; over its claim's long poll: ${ms(percentile(claimThreads.map((t) => t.on_core_ms), 50))} on a core, ${ms(percentile(claimThreads.map((t) => t.waiting_ms), 50))} waiting for one` : '');
    const toDispatcher = controller
      ? `POST -> controller's row ${stage((task, row) => row.stored - task.t0)}, -> dispatcher's row ${stage((task, row) => row.dispatcher - row.stored)}`
      : `POST -> dispatcher's row ${stage((task, row) => row.dispatcher - task.t0)}`;
    return `stages, medians (${at.size} of ${figures.tasks.length} tasks warm): ${toDispatcher}, `
      + `-> claimed by the start loop ${stage((task, row) => row.claimed - row.dispatcher)}, -> given to a pool agent ${stage((task, row) => row.given - row.claimed)}, `
      + `-> claim answer at the agent ${stage((task, row, event) => event.claimed - row.given)}, -> check-in answer ${stage((task, row, event) => event.checkedIn - event.claimed)}${thread}`;
  } finally {
    await client.end();
  }
}

/** Each task's final status at the controller (every one must be `completed`). */
async function finalsAt(server, headers, guids) {
  await Promise.all(guids.map(async (guid) => {
    for (let attempt = 0; attempt < 300; attempt++) {
      const view = await (await fetch(`${server.controller}/api/v1/tasks/${guid}/`, { headers })).json();
      if (['completed', 'failed', 'timed_out', 'cancelled'].includes(view.status)) return countStatus(controllerFinals, view.status);
      await sleep(100);
    }
    countStatus(controllerFinals, 'not final after 30 s');
  }));
}

const KUBE_NAMESPACE = 'agents';
const KUBE_IMAGE = 'registry.example/agents/warm:1';

/**
 * Kubernetes on the test API server (test/k8s, in this process; it runs no container: a Job's pod
 * is Running at once and stays so). The bench plays each pod's agent: a pool pod's claims (with
 * the pool key its Job carries) from the moment its pod runs, a cold pod's check-in from the
 * moment it runs. Warm: POST /tasks to the claim answer, as the issue asks for this engine (the
 * check-in that follows is the same as cold); cold: POST /tasks to the check-in answer.
 */
async function benchKubernetes(services, work, receiver) {
  const KubeApiServer = loadKubeApiServer();
  const kube = await KubeApiServer.start({ token: 'bench-token', namespaces: [KUBE_NAMESPACE], runPods: true });
  const db = await database();
  const agentKey = secret();
  const poolKey = createHmac('sha256', agentKey).update('pool:bench').digest('hex');
  const agents = new Set();
  const claimedAt = new Map();
  const checkedIn = new Map();
  let server;
  let stopping = false;
  try {
    if (!db.url) throw new Error('bench-warm needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    const kubeconfig = path.join(work, 'kubeconfig');
    writeFileSync(kubeconfig, kube.kubeconfig(KUBE_NAMESPACE));
    const port = await freePort();
    const apiKey = secret();
    const url = `http://127.0.0.1:${port}`;
    const agentPost = async (route, key, body) => {
      const answer = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-agent-key': key }, body: JSON.stringify(body) });
      const text = await answer.text();
      return { status: answer.status, body: text ? JSON.parse(text) : null };
    };
    /** A pool pod's agent: claims until a task comes, then checks in and back with the task's key. */
    const poolAgent = async (agentId, job) => {
      while (!stopping) {
        const claim = await agentPost('/agent/claim?wait_seconds=25', poolKey, { pool: 'bench', agent_id: agentId }).catch(() => ({ status: 'error' }));
        if (claim.status === 204) continue;
        // The dispatcher still booting: ask again, as an agent does.
        if (claim.status === 'error') {
          await sleep(200);
          continue;
        }
        if (claim.status !== 200) return;
        const { task_id: taskId, agent_key: key } = claim.body.data;
        claimedAt.set(taskId, now());
        receiver.events.set(taskId, { ...receiver.events.get(taskId) });
        await taskAgent(taskId, key, job);
        return;
      }
    };
    /** Checks in and back, then its process ends: the pod exits 0, as the Job controller then sees it. */
    const taskAgent = async (taskId, key, job) => {
      const checkin = await agentPost('/agent/checkin', key, { task_id: taskId });
      checkedIn.set(taskId, now());
      countStatus(finals, checkin.status === 200 ? 'completed' : `check-in ${checkin.status}`);
      const checkback = await agentPost('/agent/checkback', key, { task_id: taskId, status: 'completed' });
      if (checkback.status !== 200) countStatus(finals, `check-back ${checkback.status}`);
      kube.jobs.finish(KUBE_NAMESPACE, job, { exitCode: 0 });
    };
    // Before the boot: the pool's first pods are made while the dispatcher starts.
    kube.store.changes.on('change', ({ resource, object }) => {
      if (resource !== 'pods' || object.status?.phase !== 'Running' || object.metadata.namespace !== KUBE_NAMESPACE) return;
      const id = object.metadata.labels?.['task-id'];
      if (!id || agents.has(id)) return;
      agents.add(id);
      const env = object.spec.containers[0].env ?? [];
      const job = object.metadata.labels['job-name'];
      if (env.some((entry) => entry.name === 'AGENT_POOL')) void poolAgent(id, job);
      else void taskAgent(id, createHmac('sha256', agentKey).update(id).digest('hex'), job);
    });
    const pool = { cpu: '500m', memory: '256Mi' };
    server = await bootServer({
      ...services.env, ROLE: 'dispatcher', NODE_ENV: 'development', DATA_DIR: path.join(work, 'kubernetes'), DATABASE_URL: db.url,
      DISPATCHER_PORT: String(port), API_KEY: apiKey, AGENT_KEY: agentKey, DATABASE_POOL_SIZE: '8', MAX_CONCURRENT_TASKS: '200', DISPATCHER_NAME: 'bench-warm-kubernetes',
      DISPATCHER_BACKENDS: 'kubernetes', KUBECONFIG: kubeconfig, KUBE_NAMESPACE,
      WARM_POOLS: JSON.stringify([{ name: 'bench', image: KUBE_IMAGE, backend: 'kubernetes', size: poolSize, resources: pool }]),
    }, `${url}/health`, serverRoot);
    const k = { url, apiKey, engine: 'kubernetes' };
    console.log(`\nkubernetes: the test API server (no containers: pods Running at once), ${KUBE_IMAGE}, the bench as each pod's agent; warm measured to the claim answer, cold to the check-in answer; pool of ${poolSize}; ${ENGINES.process.tasks} tasks a run at ${rate}/s`);
    await waitFull(k);
    const post = async (warm) => {
      const taskId = randomUUID();
      const t0 = now();
      const answer = await fetch(`${url}/tasks`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({ task_id: taskId, agent_image: KUBE_IMAGE, runtime_target: { type: 'kubernetes', namespace: '' }, resources: warm ? pool : { ...pool, cpu: '2' }, callback_url: `${receiver.url}/callback/${taskId}`, callback_token: secret(), timeout_seconds: 300 }),
      });
      await answer.arrayBuffer();
      countStatus(posts, answer.status);
      const seen = warm ? claimedAt : checkedIn;
      while (!seen.has(taskId)) await sleep(5);
      return { guid: taskId, latency: seen.get(taskId) - t0 };
    };
    const run = (warm) => async () => {
      await waitFull(k);
      const figures = await pacedAt(ENGINES.process.tasks, () => post(warm));
      await Promise.all(figures.guids.map((taskId) => receiver.waitFor(taskId, 'callback')));
      for (const taskId of figures.guids) if (receiver.events.get(taskId).finalStatus !== 'completed') countStatus(finals, `callback ${receiver.events.get(taskId).finalStatus}`);
      console.log(`  ${warm ? 'warm, to the claim answer' : 'cold, to the check-in answer'}: p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)}, max ${ms(figures.max)}`);
      return figures;
    };
    const { runs, baselines } = await interleaved(rounds, run(false), run(true));
    const p50 = median(runs.map((r) => r.p50));
    const p99 = median(runs.map((r) => r.p99));
    const coldP50 = median(baselines.map((r) => r.p50));
    console.log(`  over ${rounds} warm runs: warm p50 ${spread(runs.map((r) => r.p50), ms)}, p99 ${spread(runs.map((r) => r.p99), ms)}; cold p50 ${spread(baselines.map((r) => r.p50), ms)}`);
    emitFigure({ figure: `warm start (kubernetes, test API server): POST /tasks to the claim answer at ${rate}/s, p50`, value: ms(p50), baseline: `${ms(coldP50)} cold to check-in`, ratio: `${(p50 / coldP50).toFixed(3)}x`, target: 'p50 < 30 ms', met: p50 < 30 });
    emitFigure({ figure: `warm start (kubernetes, test API server): POST /tasks to the claim answer at ${rate}/s, p99`, value: ms(p99), baseline: `${ms(median(baselines.map((r) => r.p99)))} cold to check-in`, ratio: `${(p99 / median(baselines.map((r) => r.p99))).toFixed(3)}x`, target: 'p99 < 150 ms', met: p99 < 150 });
  } finally {
    stopping = true;
    await server?.stop();
    await db.drop();
    await kube.close();
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
    for (const engine of engines) {
      if (engine === 'controller') await benchController(services, work, receiver);
      else if (engine === 'kubernetes') await benchKubernetes(services, work, receiver);
      else await benchEngine(engine, services, work, receiver);
    }
    console.log(`\nPOST /tasks answers: ${tally(posts)}; callbacks: ${tally(finals)}; warm tasks that started cold: ${misses}`);
    if (engines.includes('controller')) console.log(`controller answers: ${tally(controllerPosts)}; its tasks: ${tally(controllerFinals)}`);
    console.log(`load average at end: ${loadavg().map((load) => load.toFixed(2)).join(', ')}`);
    requireStatuses('POST /tasks', posts, [201]);
    requireStatuses('task callbacks', finals, ['completed']);
    if (engines.includes('controller')) {
      requireStatuses('controller POSTs', controllerPosts, [200, 201]);
      requireStatuses('controller tasks', controllerFinals, ['completed']);
    }
    if (misses > 0) process.exitCode = 1;
  } finally {
    await services?.stop();
    await receiver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
