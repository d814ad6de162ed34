#!/usr/bin/env node
// What the audit trail costs the request it sits on most often: POST /api/v1/tasks/ by an
// OAuth client (tasks:write), which now stores one audit row before it answers. Two
// controllers (ROLE=controller, LOG_LEVEL=info, each on a fresh PostgreSQL database, the
// same settings) run side by side: this checkout, and the baseline, the same server built
// from the commit before the audit trail: BENCH_BASELINE_ROOT, a built checkout of it, else
// one this script makes (`git archive` of the parent of the commit that added
// src/controller/audit/audit.module.ts, built with tsc into a temporary folder). Each run creates BENCH_TASKS tasks from BENCH_CONCURRENCY clients; runs
// alternate baseline, audited, baseline, ... BENCH_ROUNDS times, and each audited run's
// ratio is over the mean of the baseline runs beside it. Every answer must be 201, and the
// audited server must hold one `tasks.create` row per task. Needs local PostgreSQL;
// `npm run build` first.
//
//   BENCH_BASELINE_ROOT=/tmp/audit-baseline BENCH_TASKS=400 BENCH_CONCURRENCY=8 BENCH_ROUNDS=3
import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  bootServer, countStatus, database, emitFigure, freePort, interleaved, median, mergeStatuses, percentile, premises, requireStatuses, root, runBenchScript, secret, spread, tally,
} from './bench-lib.mjs';

const taskCount = Number(process.env.BENCH_TASKS ?? 400);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

/** A built checkout of the parent of the commit that brought the audit trail. */
function buildBaseline() {
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  const added = git('log', '--format=%H', '--diff-filter=A', '-1', '--', 'src/controller/audit/audit.module.ts');
  const folder = mkdtempSync(path.join(tmpdir(), 'bench-audit-baseline-'));
  execFileSync('sh', ['-c', `git archive ${added}^ | tar -x -C "${folder}"`], { cwd: root });
  symlinkSync(path.join(root, 'node_modules'), path.join(folder, 'node_modules'));
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: folder, stdio: 'inherit' });
  return { folder, commit: `${added.slice(0, 10)}^` };
}
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
  const baseline = process.env.BENCH_BASELINE_ROOT ? { folder: process.env.BENCH_BASELINE_ROOT, commit: 'BENCH_BASELINE_ROOT' } : buildBaseline();
  const baselineRoot = baseline.folder;
  premises(`POST /api/v1/tasks/ by an OAuth client, ${taskCount} per run from ${concurrency} clients, ROLE=controller at LOG_LEVEL=info on local PostgreSQL`,
    `baseline: the same server built from ${baseline.commit} (${baselineRoot})`, `load average before: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  const [before, audited] = [await bootController(baselineRoot), await bootController(undefined)];
  try {
    await createTasks(before, 100);
    await createTasks(audited, 100);
    const { runs, baselines, ratios } = await interleaved(rounds, () => createTasks(before), () => createTasks(audited));
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
    await before.stop();
  }
}

runBenchScript(main, () => undefined);
