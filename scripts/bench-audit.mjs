#!/usr/bin/env node
// What the audit trail costs the request it sits on most often: POST /api/v1/tasks/ by an
// OAuth client (tasks:write), which now stores one audit row before it answers. Two
// controllers (ROLE=controller, LOG_LEVEL=info, each on a fresh PostgreSQL database, the
// same settings) run side by side: this checkout, and the baseline, the same server built
// from the commit before the audit trail (BENCH_BASELINE_ROOT, a built checkout of it; see
// docs/audit.md). Each run creates BENCH_TASKS tasks from BENCH_CONCURRENCY clients; runs
// alternate baseline, audited, baseline, ... BENCH_ROUNDS times, and each audited run's
// ratio is over the mean of the baseline runs beside it. Every answer must be 201, and the
// audited server must hold one `tasks.create` row per task. Needs local PostgreSQL;
// `npm run build` first.
//
//   BENCH_BASELINE_ROOT=/tmp/audit-baseline BENCH_TASKS=400 BENCH_CONCURRENCY=8 BENCH_ROUNDS=3
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  bootServer, countStatus, database, emitFigure, freePort, interleaved, median, mergeStatuses, percentile, premises, requireStatuses, runBenchScript, secret, spread, tally,
} from './bench-lib.mjs';

const taskCount = Number(process.env.BENCH_TASKS ?? 400);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const baselineRoot = process.env.BENCH_BASELINE_ROOT;
const TASK = { agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 600, brief: { prompt: 'audit bench' } };

async function bootController(serverRoot) {
  const db = await database();
  if (!db.url) throw new Error('needs local PostgreSQL (or BENCH_DATABASE_URL)');
  const port = await freePort();
  const token = secret();
  const url = `http://127.0.0.1:${port}`;
  const server = await bootServer({
    ROLE: 'controller', NODE_ENV: 'development', DATABASE_URL: db.url, DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-audit-')),
    CONTROLLER_PORT: String(port), API_TOKEN: token,
  }, `${url}/health/`, serverRoot);
  const operator = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const client = await (await fetch(`${url}/api/v1/oauth/clients/`, { method: 'POST', headers: operator, body: JSON.stringify({ name: 'bench', scopes: ['tasks:write'] }) })).json();
  const grant = await fetch(`${url}/api/v1/oauth/token/`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret }),
  });
  if (grant.status !== 200) throw new Error(`token request answered ${grant.status}`);
  const bearer = { authorization: `Bearer ${(await grant.json()).access_token}`, 'content-type': 'application/json' };
  return { url, operator, bearer, clientId: client.client_id, stop: async () => { await server.stop(); await db.drop(); } };
}

/** `taskCount` task creations from `concurrency` clients: tasks a second and each answer's latency. */
async function createTasks(target, count = taskCount) {
  const statuses = new Map();
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      next += 1;
      const sent = performance.now();
      const answer = await fetch(`${target.url}/api/v1/tasks/`, { method: 'POST', headers: target.bearer, body: JSON.stringify(TASK) });
      await answer.arrayBuffer();
      latencies.push(performance.now() - sent);
      countStatus(statuses, answer.status);
    }
  }));
  return { rate: (count / (performance.now() - started)) * 1000, median: median(latencies), p95: percentile(latencies, 95), statuses };
}

async function auditRows(target) {
  const answer = await fetch(`${target.url}/api/v1/audit/?action=tasks.create&actor=${target.clientId}&count=exact&limit=1`, { headers: target.operator });
  return (await answer.json()).count;
}

async function main() {
  if (!baselineRoot) throw new Error('BENCH_BASELINE_ROOT: a built checkout of the commit before the audit trail (see docs/audit.md)');
  premises(`POST /api/v1/tasks/ by an OAuth client, ${taskCount} per run from ${concurrency} clients, ROLE=controller at LOG_LEVEL=info on local PostgreSQL`,
    `baseline: the same server built at ${baselineRoot}`, `load average before: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  const [baseline, audited] = [await bootController(baselineRoot), await bootController(undefined)];
  try {
    await createTasks(baseline, 100);
    await createTasks(audited, 100);
    const { runs, baselines, ratios } = await interleaved(rounds, () => createTasks(baseline), () => createTasks(audited));
    requireStatuses('task creation', mergeStatuses(...runs.map((run) => run.statuses), ...baselines.map((run) => run.statuses)), [201]);
    const rows = await auditRows(audited);
    const created = 100 + rounds * taskCount;
    if (rows !== created) throw new Error(`the audited server holds ${rows} tasks.create rows for ${created} tasks`);
    for (const [name, set] of [['baseline', baselines], ['audited', runs]]) {
      console.log(`${name.padEnd(8)} tasks/s ${spread(set.map((run) => run.rate))}; latency ms median ${spread(set.map((run) => run.median), (v) => v.toFixed(1))}, p95 ${spread(set.map((run) => run.p95), (v) => v.toFixed(1))}`);
    }
    const rateRatios = ratios((run) => run.rate);
    const latencyRatios = ratios((run) => run.median);
    console.log(`audited / baseline: tasks/s ${spread(rateRatios, (v) => v.toFixed(3))}; median latency ${spread(latencyRatios, (v) => v.toFixed(3))}`);
    console.log(`statuses: ${tally(mergeStatuses(...runs.map((run) => run.statuses)))} audited, ${rows} audit rows; load average after: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
    const ratio = median(rateRatios);
    emitFigure({ figure: 'task creation with the audit trail (tasks/s vs before)', value: median(runs.map((run) => run.rate)), baseline: median(baselines.map((run) => run.rate)), ratio, target: 0.95, met: ratio >= 0.95 });
  } finally {
    await audited.stop();
    await baseline.stop();
  }
}

runBenchScript(main, () => undefined);
