#!/usr/bin/env node
// Crash run: CRASH_TASKS task lives (default 100) through a controller and one dispatcher,
// each the built server in a process of its own on one PostgreSQL database, the dispatcher
// on the process engine with the bundled example agents (echo, and sleep for 1-8 s). While
// the tasks are created and run, the dispatcher is SIGKILLed CRASH_KILLS times (default 8)
// at random points and started again each time after a random pause. A proxy in front of
// the controller sees every callback. At the end it prints, and checks task by task:
//  - its final status as the controller's API answers it is the one its agent earns (echo and
//    sleep both end `completed`; anything else is a failure, named with the task);
//  - the controller applied exactly one callback for it (re-sends after a kill are answered
//    `duplicate` and counted apart), as seen by the proxy;
//  - its agent started once (from the agent logs), and the dispatcher holds exactly one task
//    for it and none for a task the controller does not know;
// and, for the run: every callback delivered (the dispatcher's outbox holds no row that is
// not delivered) and the time from the last restart to the last callback.
// Exits 1 when a check fails. Needs local PostgreSQL (127.0.0.1:5432, user postgres) or
// BENCH_DATABASE_URL; `npm run build` first. Not a test: a script with figures, like the
// bench scripts.
//
// CRASH_OUTAGE_SECONDS (default 0) keeps the dispatcher down that long after the middle kill:
// with 150, longer than the agent SDK's 120 s retry floor, agents live only by waiting until
// their TASK_DEADLINE.
//
//   CRASH_TASKS=100 CRASH_KILLS=8 CRASH_RATE=4 CRASH_WAIT_SECONDS=300 CRASH_SEED=<n> CRASH_OUTAGE_SECONDS=0
import { readdirSync, readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { bootServer, database, freePort, percentile, secret } from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const taskCount = env('CRASH_TASKS', 100);
const killCount = env('CRASH_KILLS', 8);
const rate = env('CRASH_RATE', 4);
const waitSeconds = env('CRASH_WAIT_SECONDS', 300);
const outageSeconds = env('CRASH_OUTAGE_SECONDS', 0);
let seed = env('CRASH_SEED', Date.now() % 100000);
const FINAL = ['completed', 'failed', 'timed_out', 'cancelled'];

/** A small seeded generator (mulberry32), so a run's kill points can be repeated with CRASH_SEED. */
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Forwards every request to the controller and records each task callback and its answer. */
async function callbackProxy(target) {
  const callbacks = [];
  const server = http.createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', async () => {
      const body = Buffer.concat(chunks);
      try {
        const answer = await fetch(`${target}${request.url}`, { method: request.method, headers: request.headers, body: body.length ? body : undefined });
        const text = await answer.text();
        const match = /\/api\/v1\/tasks\/([^/]+)\/callback\/?$/.exec(request.url ?? '');
        if (match) {
          const parsed = (() => { try { return JSON.parse(text); } catch { return {}; } })();
          callbacks.push({ guid: match[1], status: answer.status, duplicate: parsed.duplicate === true, at: Date.now() });
        }
        response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
      } catch {
        response.writeHead(502).end();
      }
    });
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  return { url: `http://127.0.0.1:${port}`, callbacks, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

/** The dispatcher as a process that can be killed at any moment and started again with the same settings. */
function killableDispatcher(settings, healthUrl) {
  let server;
  return {
    start: async () => { server = await bootServer(settings, healthUrl); },
    kill: async () => {
      const child = server.child;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    stop: () => server?.stop(),
  };
}

/** What each task must end as: both example agents exit 0, so a kill may delay a task, never change its outcome. */
const EXPECTED_STATUS = 'completed';

function taskBody(index) {
  const sleeper = index % 2 === 1;
  return JSON.stringify({
    agent_image: sleeper ? 'agent-examples/sleep' : 'agent-examples/echo',
    runtime_target: { type: 'local', namespace: '' },
    resources: { cpu: '100m', memory: '64Mi' },
    env: sleeper ? { SLEEP_SECONDS: String(1 + Math.floor(random() * 8)) } : { GREETING: `crash-run ${index}` },
    timeout_seconds: 600,
    brief: { prompt: `task ${index}` },
  });
}

/** Agent starts per task, from the agent logs (each start prints "task <id> starting"; a log is appended to, never replaced). */
function agentStarts(logDir, guid) {
  const file = path.join(logDir, `${guid}.log`);
  if (!existsSync(file)) return 0;
  return (readFileSync(file, 'utf8').match(new RegExp(`task ${guid} starting`, 'g')) ?? []).length;
}

/** Agents left running by the run (SIGKILLed with it at the end). */
function killLeftAgents(guids) {
  const wanted = new Set(guids.map((guid) => `TASK_ID=${guid}`));
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').some((line) => wanted.has(line))) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}

const tally = (values) => [...values.reduce((map, value) => map.set(value, (map.get(value) ?? 0) + 1), new Map())].map(([k, n]) => `${k} ${n}`).join(', ');

async function main() {
  const db = await database();
  if (!db.url) throw new Error('crash-run needs PostgreSQL (127.0.0.1:5432 or BENCH_DATABASE_URL)');
  const work = mkdtempSync(path.join(tmpdir(), 'crash-run-'));
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const controllerUrl = `http://127.0.0.1:${controllerPort}`;
  const dispatcherUrl = `http://127.0.0.1:${dispatcherPort}`;
  const proxy = await callbackProxy(controllerUrl);
  const shared = { NODE_ENV: 'development', LOG_LEVEL: 'fatal', DATABASE_URL: db.url, DATA_DIR: work, CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort), CALLBACK_SIGNING_KEY: secret() };
  const token = secret();
  const controller = await bootServer({ ...shared, ROLE: 'controller', API_TOKEN: token, SECRET_KEY: secret(), DISPATCHER_API_KEY: secret(), PUBLIC_URL: proxy.url }, `${controllerUrl}/health/`);
  const dispatcher = killableDispatcher({
    ...shared, ROLE: 'dispatcher', API_KEY: secret(), AGENT_KEY: secret(), CONTROLLER_URL: controllerUrl, CONTROLLER_TOKEN: token,
    DISPATCHER_INSTANCE: 'crash-run', LOCAL_ENGINE: 'process', MAX_CONCURRENT_TASKS: '16', HEARTBEAT_INTERVAL_SECONDS: '2',
  }, `${dispatcherUrl}/health`);
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const guids = [];
  const sql = new pg.Client({ connectionString: db.url });
  let ok = false;
  try {
    await dispatcher.start();
    await sql.connect();
    await waitUntil(async () => {
      const body = await (await fetch(`${controllerUrl}/api/v1/dispatchers/`, { headers })).json();
      return (Array.isArray(body) ? body : (body.results ?? [])).some((entry) => entry.state === 'online');
    }, 60_000, 'the dispatcher to be online');

    const createSeconds = taskCount / rate;
    const killTimes = Array.from({ length: killCount }, () => 1000 + random() * (createSeconds + 15) * 1000).sort((a, b) => a - b);
    const started = Date.now();
    const restarts = [];
    const creating = createTasks(controllerUrl, headers, guids, started);
    const killing = (async () => {
      for (const at of killTimes) {
        await sleep(Math.max(0, started + at - Date.now()));
        await dispatcher.kill();
        const killedAt = Date.now();
        // CRASH_OUTAGE_SECONDS: one of the kills (the middle one) keeps the dispatcher down that long, past the agents' 120 s retry floor.
        const outage = at === killTimes[Math.floor(killTimes.length / 2)] && outageSeconds > 0;
        await sleep(outage ? outageSeconds * 1000 : 300 + random() * 2700);
        await dispatcher.start();
        restarts.push({ killedAt, upAt: Date.now() });
      }
    })();
    const [failedPosts] = await Promise.all([creating, killing]);

    await waitUntil(async () => {
      const { rows } = await sql.query(`SELECT count(*)::int AS n FROM controller.tasks WHERE guid = ANY($1) AND status = ANY($2)`, [guids, FINAL]);
      const { rows: open } = await sql.query(`SELECT count(*)::int AS n FROM dispatcher.callback_outbox WHERE state <> 'delivered'`);
      return rows[0].n === guids.length && open[0].n === 0;
    }, waitSeconds * 1000, 'every task final and every callback delivered').catch((error) => console.log(`   ${error.message}`));
    ok = report({ guids, failedPosts, restarts, started, proxy, logDir: path.join(work, 'agent-logs'), ...(await facts(sql, guids, controllerUrl, headers)) });
  } finally {
    killLeftAgents(guids);
    await sql.end().catch(() => undefined);
    await dispatcher.stop().catch(() => undefined);
    await controller.stop();
    await proxy.close();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = ok ? 0 : 1;
}

/** POSTs the tasks at `rate` per second; a POST refused or unanswered is counted, not retried. */
async function createTasks(controllerUrl, headers, guids, started) {
  const failed = [];
  await Promise.all(Array.from({ length: taskCount }, async (_, index) => {
    await sleep(Math.max(0, started + (index * 1000) / rate - Date.now()));
    const answer = await fetch(`${controllerUrl}/api/v1/tasks/`, { method: 'POST', headers, body: taskBody(index) }).catch((error) => ({ status: error.message }));
    if (answer.status === 201) guids.push((await answer.json()).guid);
    else failed.push(answer.status);
  }));
  return failed;
}

/** Each task's final state as the controller's API answers it, and what the dispatcher holds. */
async function facts(sql, guids, controllerUrl, headers) {
  const controller = [];
  for (const guid of guids) {
    const answer = await fetch(`${controllerUrl}/api/v1/tasks/${guid}/`, { headers });
    controller.push({ guid, status: answer.status === 200 ? (await answer.json()).status : `GET ${answer.status}` });
  }
  const dispatcherTasks = (await sql.query(`SELECT task_id FROM dispatcher.tasks`)).rows;
  const outbox = (await sql.query(`SELECT state, count(*)::int AS n FROM dispatcher.callback_outbox GROUP BY state`)).rows;
  const endings = (await sql.query(`SELECT task_id, status, error_message, runtime_ref, created_at, started_at, finished_at FROM dispatcher.tasks`)).rows;
  return { controller, dispatcherTasks, outbox, endings };
}

function report({ guids, failedPosts, restarts, started, proxy, logDir, controller, dispatcherTasks, outbox, endings }) {
  const known = new Set(guids);
  const held = new Map();
  for (const row of dispatcherTasks) held.set(row.task_id, (held.get(row.task_id) ?? 0) + 1);
  const perTask = controller.map(({ guid, status }) => {
    const seen = proxy.callbacks.filter((c) => c.guid === guid);
    return {
      guid,
      status,
      applied: seen.filter((c) => c.status === 200 && !c.duplicate).length,
      duplicates: seen.filter((c) => c.duplicate).length,
      refused: seen.filter((c) => c.status !== 200).length,
      starts: agentStarts(logDir, guid),
      atDispatcher: held.get(guid) ?? 0,
    };
  });
  const wrong = perTask.filter((t) => t.status !== EXPECTED_STATUS || t.applied !== 1 || t.starts !== 1 || t.atDispatcher !== 1);
  const strangers = dispatcherTasks.filter((row) => !known.has(row.task_id)).length;
  const undelivered = outbox.filter((row) => row.state !== 'delivered').reduce((sum, row) => sum + row.n, 0);
  const lastRestart = restarts.at(-1)?.upAt ?? started;
  const lastCallback = Math.max(...proxy.callbacks.map((c) => c.at));
  const downtimes = restarts.map((r) => r.upAt - r.killedAt);

  console.log(`Crash run: ${taskCount} tasks at ${rate}/s (echo and sleep 1-8 s, process engine), ${restarts.length} SIGKILLs of the dispatcher, seed ${process.env.CRASH_SEED ?? 'random'}${outageSeconds > 0 ? `, the middle one followed by ${outageSeconds} s down` : ''}`);
  console.log(`   kills at ${restarts.map((r) => ((r.killedAt - started) / 1000).toFixed(1)).join(', ')} s; down (kill -> healthy again) p50 ${(percentile(downtimes, 50) / 1000).toFixed(1)} s, max ${(Math.max(...downtimes) / 1000).toFixed(1)} s`);
  console.log(`   POSTs: ${guids.length} created${failedPosts.length ? `, refused or unanswered: ${tally(failedPosts)}` : ''}`);
  console.log(`   final status at the controller's API (each must be ${EXPECTED_STATUS}): ${tally(perTask.map((t) => t.status))}`);
  console.log(`   callbacks applied per task (each must be 1): ${tally(perTask.map((t) => t.applied))}; re-sends answered duplicate: ${perTask.reduce((n, t) => n + t.duplicates, 0)}; refused: ${perTask.reduce((n, t) => n + t.refused, 0)}`);
  console.log(`   dispatcher tasks per task (each must be 1): ${tally(perTask.map((t) => t.atDispatcher))}; for unknown tasks: ${strangers}`);
  console.log(`   agent starts per task (each must be 1): ${tally(perTask.map((t) => t.starts))}`);
  console.log(`   dispatcher outbox: ${outbox.map((row) => `${row.state} ${row.n}`).join(', ')}`);
  console.log(`   at the dispatcher: ${tally(endings.map((t) => t.status))}`);
  const reasons = endings.filter((t) => t.status !== 'completed').map((t) => `${t.status}${t.runtime_ref ? '' : ' (never submitted)'}: ${(t.error_message ?? '').replace(/[0-9a-f-]{36}|\d+/g, '#').slice(0, 110)}`);
  if (reasons.length) console.log(`   not completed, why: ${tally(reasons)}`);
  for (const t of wrong.slice(0, 10)) {
    console.log(`   task ${t.guid}: ${t.status}, callbacks applied ${t.applied}, agent starts ${t.starts}, dispatcher tasks ${t.atDispatcher}`);
  }
  const since = (date) => (date ? `${((new Date(date).getTime() - started) / 1000).toFixed(1)} s` : '-');
  for (const callback of [...proxy.callbacks].sort((a, b) => b.at - a.at).slice(0, 3)) {
    const task = endings.find((t) => t.task_id === callback.guid);
    console.log(`   late callback at ${since(callback.at)}: dispatcher task created ${since(task?.created_at)}, started ${since(task?.started_at)}, finished ${since(task?.finished_at)}, ${task?.status}, agent starts ${agentStarts(logDir, callback.guid)}`);
  }
  const backlog = endings.filter((t) => new Date(t.created_at).getTime() >= (restarts.at(-1)?.killedAt ?? started)).length;
  console.log(`   tasks that reached the dispatcher after the last kill (held at the controller while it was down): ${backlog}`);
  console.log(`   last restart -> last callback: ${((lastCallback - lastRestart) / 1000).toFixed(1)} s; first POST -> last callback: ${((lastCallback - started) / 1000).toFixed(1)} s`);
  const ok = guids.length === taskCount && controller.length === guids.length && wrong.length === 0 && strangers === 0 && undelivered === 0;
  console.log(ok ? `   OK: every task ${EXPECTED_STATUS} with one callback applied, one dispatcher task and one agent start; every callback delivered` : `   FAILED: ${wrong.length} task(s) off their expected outcome (listed above), ${strangers} unknown dispatcher task(s), ${undelivered} undelivered callback(s)`);
  return ok;
}

async function waitUntil(probe, timeoutMs, what) {
  const until = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await sleep(250);
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
