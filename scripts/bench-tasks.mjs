#!/usr/bin/env node
// Two paths of the all-in-one system, measured from a client on loopback. The server runs as
// in production: ROLE=all at LOG_LEVEL=info with its access log, objects in s3rver, Redis, its
// dispatcher online and consuming (LOCAL_ENGINE=process, the image bench/checkin mapped to
// scripts/bench-agent.sh, a shell and curl that check in and check back `completed`).
//  1. webhook ingest: signed custom deliveries that match no workflow (verify, de-duplicate,
//     route, ledger), BENCH_DELIVERIES per run from BENCH_CONCURRENCY clients, every answer
//     202; baseline: a bare node:http server that checks the same HMAC and INSERTs one row
//     (bench-lib's hmacInsertServer);
//  2. tasks end to end: BENCH_TASKS tasks created at the controller, dispatched, run by the
//     agent as local processes and closed by their callbacks, every answer 201 and every
//     task `completed` at the controller; tasks per second from the first POST to the last
//     task final; baseline: the same agent spawned bare BENCH_MAX_CONCURRENT at a time,
//     checking in at a stub that answers at once (spawns per second).
// Each section runs BENCH_ROUNDS (3) times, each run between two baseline runs; its ratio is
// over the mean of those two. Median and spread printed; the server's peak RSS too. An
// unexpected status fails the run. Needs local PostgreSQL and Redis; `npm run build` first.
//
//   BENCH_DELIVERIES=1000 BENCH_CONCURRENCY=20 BENCH_TASKS=60 BENCH_MAX_CONCURRENT=10 BENCH_ROUNDS=3
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  allInOneConsumer, BENCH_AGENT_COMMAND, BENCH_AGENT_IMAGE, bootAllInOne, countStatus, database, emitFigure, forkBaseline, hmacInsertServer, interleaved,
  median, mergeStatuses, percentile, premises, productionServices, requireStatuses, root, rssSampler, runBenchScript, secret, spread, tally,
} from './bench-lib.mjs';

const deliveries = Number(process.env.BENCH_DELIVERIES ?? 1000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const taskCount = Number(process.env.BENCH_TASKS ?? 60);
const maxConcurrent = Number(process.env.BENCH_MAX_CONCURRENT ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const FINAL = ['completed', 'failed', 'timed_out', 'cancelled'];
const WEBHOOK_SECRET = secret();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function inParallel(count, width, work) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await work(next++);
  }));
}

/** One run of signed custom deliveries to `url`: rate, p50, p99 and the answers' statuses. */
async function webhooks(url) {
  const latencies = [];
  const statuses = new Map();
  const started = performance.now();
  await inParallel(deliveries, concurrency, async () => {
    const body = JSON.stringify({ type: 'bench.event', data: { id: randomUUID() } });
    const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
    const t0 = performance.now();
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-webhook-source': 'custom', 'x-webhook-event': 'bench.event', 'x-webhook-id': randomUUID(), 'x-webhook-signature': signature },
      body,
    }).catch(() => null);
    await answer?.arrayBuffer();
    latencies.push(performance.now() - t0);
    countStatus(statuses, answer?.status ?? 'error');
  });
  const seconds = (performance.now() - started) / 1000;
  return { rate: deliveries / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}

/** One run of tasks end to end: created, dispatched, run, closed; tasks/s to the last one final. */
async function tasks(controller, token) {
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const statuses = new Map();
  const guids = [];
  const started = performance.now();
  await inParallel(taskCount, maxConcurrent, async (i) => {
    const answer = await fetch(`${controller}/api/v1/tasks/`, {
      method: 'POST', headers,
      body: JSON.stringify({ agent_image: BENCH_AGENT_IMAGE, runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '128Mi' }, timeout_seconds: 300, brief: { n: i } }),
    }).catch(() => null);
    const body = await answer?.json().catch(() => null);
    countStatus(statuses, answer?.status ?? 'error');
    if (answer?.status === 201) guids.push(body.guid);
  });
  const finals = new Map();
  while (finals.size < guids.length && performance.now() - started < 600_000) {
    for (const guid of guids) {
      if (finals.has(guid)) continue;
      const task = await (await fetch(`${controller}/api/v1/tasks/${guid}/`, { headers })).json();
      if (FINAL.includes(task.status)) finals.set(guid, task.status);
    }
    if (finals.size < guids.length) await sleep(200);
  }
  const seconds = (performance.now() - started) / 1000;
  const outcomes = new Map();
  for (const guid of guids) countStatus(outcomes, finals.get(guid) ?? 'not final after 10 minutes');
  return { rate: taskCount / seconds, seconds, statuses, outcomes };
}

/** The baseline of section 2: the same agent spawned bare, maxConcurrent at a time, checking in at a stub. */
async function bareSpawns() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  const exits = new Map();
  const started = performance.now();
  const [command, ...args] = BENCH_AGENT_COMMAND.split(' ');
  await inParallel(taskCount, maxConcurrent, async (i) => {
    const child = spawn(command, args, {
      cwd: root, stdio: 'ignore', env: { PATH: process.env.PATH, TASK_ID: `bare-${i}`, DISPATCHER_URL: `http://127.0.0.1:${port}`, AGENT_KEY: 'bare' },
    });
    countStatus(exits, await new Promise((resolve) => child.once('exit', resolve)));
  });
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => server.close(resolve));
  return { rate: taskCount / seconds, exits };
}

async function main() {
  const db = await database();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-tasks-'));
  let services;
  let server;
  let baseline;
  try {
    if (!db.url) throw new Error('bench-tasks needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    services = await productionServices();
    premises(services.statement, 'PostgreSQL (local, a fresh database)', `consumer: ${allInOneConsumer(maxConcurrent)}`);
    baseline = await forkBaseline(fileURLToPath(import.meta.url), {
      BASELINE_DATABASE_URL: db.url, BASELINE_SECRET: WEBHOOK_SECRET, BASELINE_SIGNATURE_HEADER: 'x-webhook-signature',
    });
    server = await bootAllInOne({ services, databaseUrl: db.url, dataDir: path.join(work, 'data'), maxConcurrent, env: { CUSTOM_WEBHOOK_SECRET: WEBHOOK_SECRET } });
    const sampler = rssSampler(server.child.pid);
    const pct = (value) => `${(100 * value).toFixed(0)}%`;
    const ms = (value) => `${value.toFixed(1)} ms`;
    const perSecond = (value) => `${value.toFixed(1)}/s`;

    await webhooks(`${server.controller}/api/v1/webhooks/`);
    await webhooks(baseline.url);
    const ingest = await interleaved(rounds, () => webhooks(baseline.url), () => webhooks(`${server.controller}/api/v1/webhooks/`));
    const ingestShares = ingest.ratios((run) => run.rate);
    console.log(`1. webhook ingest: ${deliveries} signed custom deliveries per run, ${concurrency} at a time, ${rounds} runs each between two baseline runs`);
    console.log(`   ${spread(ingest.runs.map((run) => run.rate), perSecond)}; p50 ${spread(ingest.runs.map((run) => run.p50), ms)}; p99 ${spread(ingest.runs.map((run) => run.p99), ms)}`);
    console.log(`   baseline (bare node:http, one HMAC, one INSERT): ${spread(ingest.baselines.map((run) => run.rate), perSecond)}; share of the baseline runs beside each: ${spread(ingestShares, pct)}`);
    const ingestStatuses = mergeStatuses(...ingest.runs.map((run) => run.statuses));
    console.log(`   answers: ${tally(ingestStatuses)}`);
    const ingestOk = requireStatuses('1. webhook ingest', ingestStatuses, [202]) & requireStatuses('1. baseline', mergeStatuses(...ingest.baselines.map((run) => run.statuses)), [202]);
    emitFigure({
      figure: 'tasks bench, 1. ignored custom webhooks (202)', value: perSecond(median(ingest.runs.map((run) => run.rate))),
      baseline: perSecond(median(ingest.baselines.map((run) => run.rate))), ratio: pct(median(ingestShares)), target: 'none here (bench-ingest holds the targets)', met: Boolean(ingestOk),
    });

    const e2e = await interleaved(rounds, () => bareSpawns(), () => tasks(server.controller, server.token));
    const e2eShares = e2e.ratios((run) => run.rate);
    const created = mergeStatuses(...e2e.runs.map((run) => run.statuses));
    const outcomes = mergeStatuses(...e2e.runs.map((run) => run.outcomes));
    console.log(`2. tasks end to end: ${taskCount} tasks per run (${BENCH_AGENT_IMAGE} -> ${BENCH_AGENT_COMMAND}), created ${maxConcurrent} at a time, MAX_CONCURRENT_TASKS=${maxConcurrent}, ${rounds} runs each between two baseline runs`);
    console.log(`   first POST to last task final: ${spread(e2e.runs.map((run) => run.rate), (value) => `${value.toFixed(2)} tasks/s`)}`);
    console.log(`   baseline (the same agent spawned bare, ${maxConcurrent} at a time, checking in at a stub): ${spread(e2e.baselines.map((run) => run.rate), (value) => `${value.toFixed(2)} spawns/s`)}; share of the runs beside each: ${spread(e2eShares, pct)}`);
    console.log(`   answers: ${tally(created)}; at the controller: ${tally(outcomes)}; bare agents' exit codes: ${tally(mergeStatuses(...e2e.baselines.map((run) => run.exits)))}`);
    const e2eOk = requireStatuses('2. task creations', created, [201]) & requireStatuses('2. final task statuses', outcomes, ['completed'])
      & requireStatuses('2. bare agents (exit code)', mergeStatuses(...e2e.baselines.map((run) => run.exits)), [0]);
    emitFigure({
      figure: 'tasks bench, 2. tasks end to end (created to completed)', value: `${median(e2e.runs.map((run) => run.rate)).toFixed(2)}/s`,
      baseline: `${median(e2e.baselines.map((run) => run.rate)).toFixed(2)}/s bare spawns`, ratio: pct(median(e2eShares)),
      target: 'none (shown); every task completed', met: Boolean(e2eOk),
    });
    console.log(`   server RSS peak: ${sampler.stop().toFixed(0)} MiB (both roles in one process; agents are processes of their own)`);
  } finally {
    baseline?.stop();
    await server?.stop();
    await services?.stop();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main, hmacInsertServer);
