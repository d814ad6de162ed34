#!/usr/bin/env node
// Webhook ingest throughput and latency, beside a same-run bare baseline run just before and
// just after each measured run (BENCH_INGEST_ROUNDS runs per section, the median reported):
//  A. baseline: a bare node:http server that checks one HMAC and INSERTs one row per request;
//  B. ignored: signed forge pushes with unique delivery ids that no workflow matches (202);
//  C. routed: signed forge pushes that a workflow matches, each storing its task (200);
//  D. callbacks: signed final callbacks for those tasks, once a fake dispatcher (an HTTP
//     server here that keeps each task's callback_token and answers 201) has taken them.
// The server runs as in production: LOG_LEVEL=info with its access log, objects in s3rver,
// Redis. Every answer's status is checked: one that is not the section's expected status
// fails the run (exit 1). Each section prints its median and spread over its runs.
// Needs local PostgreSQL (127.0.0.1:5432, user postgres) and Redis (REDIS_URL, default
// redis://127.0.0.1:6379). Run `npm run build` first.
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootServer, database, dispatcherStandIn, emitFigure, forkBaseline, freePort, hmacInsertServer, percentile, productionServices, requireStatuses, secret, spread, runBenchScript, postStatus } from './bench-lib.mjs';

const count = Number(process.env.BENCH_INGEST_REQUESTS ?? 4000);
const connections = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 64);
const warmup = 200;
const rounds = Number(process.env.BENCH_INGEST_ROUNDS ?? 3);
const FORGE_SECRET = secret();

function forgePush(repository) {
  const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID(), repository: { full_name: repository }, pusher: { name: 'bench' } });
  const signature = `sha256=${createHmac('sha256', FORGE_SECRET).update(body).digest('hex')}`;
  return { body, headers: { 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature } };
}

/** `total` POSTs over `width` keep-alive connections, each sending its next when answered. */
async function load(url, total, width, request) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: width });
  const latencies = [];
  const statuses = new Map();
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < total) {
      next++;
      const { body, headers, url: target } = request();
      const t0 = performance.now();
      const status = await postStatus(agent, target ?? url, body, headers).catch(() => 'error');
      latencies.push(performance.now() - t0);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }));
  agent.destroy();
  const seconds = (performance.now() - started) / 1000;
  return { rate: total / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}


/** Starts the baseline server (bench-lib's hmacInsertServer) in a child process; answers its URL and a stop function. */
const startBaseline = (db) => forkBaseline(fileURLToPath(import.meta.url), { BASELINE_DATABASE_URL: db.url, BASELINE_SECRET: FORGE_SECRET });

/**
 * Each section runs ROUNDS times, and every run sits between two runs of the baseline: its
 * share is its rate over the mean of those two, so a machine that slows down or speeds up
 * during the benchmark moves both. The run with the median share is reported.
 */
async function section(baselineUrl, run, baselineRuns) {
  const results = [];
  for (let round = 0; round < rounds; round++) {
    const before = baselineRuns.at(-1) ?? (await measureBaseline(baselineUrl, baselineRuns));
    const figures = await run(round);
    const after = await measureBaseline(baselineUrl, baselineRuns);
    const reference = { rate: (before.rate + after.rate) / 2, p99: (before.p99 + after.p99) / 2 };
    results.push({ figures, reference, share: figures.rate / reference.rate });
  }
  const statuses = new Map();
  for (const { figures } of results) for (const [status, n] of figures.statuses) statuses.set(status, (statuses.get(status) ?? 0) + n);
  const all = { shares: results.map((result) => result.share), rates: results.map((result) => result.figures.rate), statuses };
  results.sort((a, b) => a.share - b.share);
  return { ...results[Math.floor(results.length / 2)], ...all };
}

async function measureBaseline(url, runs) {
  const figures = await load(url, count, connections, () => forgePush('bench/ignored'));
  runs.push(figures);
  return figures;
}

async function controller(db, work, baselineUrl, services) {
  const port = await freePort();
  const token = secret();
  const base = `http://127.0.0.1:${port}`;
  const server = await bootServer({
    ...services.env, ROLE: 'controller', NODE_ENV: 'development', DATA_DIR: path.join(work, 'controller'), DATABASE_URL: db.url,
    CONTROLLER_PORT: String(port), API_TOKEN: token, FORGE_WEBHOOK_SECRET: FORGE_SECRET, CALLBACK_SIGNING_KEY: CALLBACK_KEY,
  }, `${base}/health/`);
  try {
    const url = `${base}/api/v1/webhooks/`;
    const baselineRuns = [];
    await load(baselineUrl, warmup, connections, () => forgePush('bench/ignored'));
    await load(url, warmup, connections, () => forgePush('bench/ignored'));
    const ignored = await section(baselineUrl, () => load(url, count, connections, () => forgePush('bench/ignored')), baselineRuns);
    // Printed as soon as measured: a later section that fails does not take these figures with it.
    report('B. ignored webhook ingest (202)', ignored, 202, 0.6, ', p99 <= 3x');
    const workflow = {
      id: 'bench-routed', triggers: [{ source: 'forge', event: 'push', filter: { 'repository.full_name': 'bench/routed' } }],
      task_template: { agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, timeout_seconds: 600, brief: { after: '{{payload.after}}' } },
    };
    const created = await fetch(`${base}/api/v1/workflows/`, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(workflow) });
    if (created.status !== 201) throw new Error(`workflow not created: ${created.status} ${await created.text()}`);
    const routed = await section(baselineUrl, () => load(url, count, connections, () => forgePush('bench/routed')), baselineRuns);
    report('C. routed webhook ingest (200, task stored)', routed, 200, 0.35);
    const callbacks = await benchCallbacks(base, token, baselineUrl, baselineRuns);
    return { ignored, routed, callbacks, baselineRuns };
  } finally {
    await server.stop();
  }
}

const CALLBACK_KEY = secret();

async function benchCallbacks(base, token, baselineUrl, baselineRuns) {
  const dispatcher = await dispatcherStandIn(base, token);
  try {
    const wanted = count * rounds;
    // The routed tasks go out through the controller's dispatch loop: on a loaded machine that takes minutes.
    const deadline = Date.now() + 600_000;
    while (dispatcher.tokens.size < wanted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const taken = [...dispatcher.tokens];
    if (taken.length < wanted) throw new Error(`only ${taken.length} of ${wanted} routed tasks reached the dispatcher`);
    let next = 0;
    return await section(baselineUrl, () => load(base, count, connections, () => {
      const [guid, callbackToken] = taken[next++];
      const body = JSON.stringify({ status: 'completed', exit_code: 0, result_key: `results/${guid}/result.json` });
      const signature = `sha256=${createHmac('sha256', CALLBACK_KEY).update(body).digest('hex')}`;
      return { url: `${base}/api/v1/tasks/${guid}/callback/`, body, headers: { authorization: `Bearer ${callbackToken}`, 'x-service-signature': signature } };
    }), baselineRuns);
  } finally {
    dispatcher.close();
  }
}

const ms = (value) => `${value.toFixed(1)} ms`;
const tally = (statuses) => [...statuses].map(([status, n]) => `${status} x${n}`).join(', ');

function report(name, result, expectedStatus, targetShare, extra = '') {
  const { figures, reference, share, shares, rates, statuses } = result;
  const pct = (value) => `${(100 * value).toFixed(0)}%`;
  console.log(`${name}: ${spread(rates)} requests/s over ${rates.length} runs; median run p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)} (${tally(statuses)})`);
  console.log(`   share of the baseline runs beside each: ${spread(shares, pct)}; the median run's p99 ${(figures.p99 / reference.p99).toFixed(1)}x theirs (target: share >= ${pct(targetShare)}${extra})`);
  const answered = requireStatuses(name, statuses, [expectedStatus]);
  emitFigure({ figure: name, value: `${figures.rate.toFixed(0)} rps`, baseline: `${reference.rate.toFixed(0)} rps`, ratio: pct(share), target: `>= ${pct(targetShare)}`, met: answered && share >= targetShare });
}

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-ingest-'));
  const databases = [await database(), await database()];
  let baseline;
  let services;
  try {
    if (!databases[0].url) throw new Error('bench-ingest needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    services = await productionServices();
    console.log(`${count} signed forge pushes per run, ${connections} keep-alive connections, ${rounds} runs per section, each between two baseline runs; PostgreSQL local; ${services.statement}; routed tasks and callbacks go to a dispatcher stand-in on loopback that takes every task at once (no agent runs)`);
    baseline = await startBaseline(databases[0]);
    const { callbacks, baselineRuns } = await controller(databases[1], work, baseline.url, services);
    const rates = baselineRuns.map((run) => run.rate).sort((a, b) => a - b);
    const middle = baselineRuns.slice().sort((a, b) => a.rate - b.rate)[Math.floor(baselineRuns.length / 2)];
    console.log(`A. baseline (bare node:http, one HMAC, one INSERT), ${baselineRuns.length} runs: ${rates[0].toFixed(0)}-${rates.at(-1).toFixed(0)} requests/s, median run p50 ${ms(middle.p50)}, p99 ${ms(middle.p99)}`);
    requireStatuses('A. baseline', new Map(baselineRuns.flatMap((run) => [...run.statuses])), [202]);
    report('D. signed task callbacks (200)', callbacks, 200, 0.5);
  } finally {
    baseline?.stop();
    await services?.stop();
    for (const db of databases) await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main, hmacInsertServer);
