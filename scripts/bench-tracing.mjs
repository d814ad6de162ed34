#!/usr/bin/env node
// Tracing's cost on the two request paths that store tasks: routed webhook ingest (a signed
// forge push matched by a workflow, 200 once its task is stored) and POST /api/v1/tasks/ (201).
// Two controllers run side by side, each on its own database, with the production services and
// a consumer online (a dispatcher stand-in that takes every task at once, so the dispatch loop
// sends the stored tasks out during the runs; no agent runs). A run ends when every task it
// stored has been handed to the consumer, so its CPU per request holds the hand-off too:
//   off: no OTEL_* variable set (the default: the SDK is never loaded);
//   on:  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, sampler always_on, every span exported as
//        OTLP/HTTP JSON to a receiver process on loopback (test/harness/otlp-receiver.mjs,
//        which decodes each export as a collector would); its batch queue is large enough that
//        no span is dropped, and the spans received are counted and printed.
// Runs are interleaved (off, on, off, ..., off): each "on" run is compared with the mean of
// the "off" runs just before and after it. With BENCH_TRACING_BEFORE_ROOT (the root of a
// checkout built before tracing existed, `npm run build` done there) a server from that build
// is then compared the same way with a fresh "off" server, for "off is the same as before".
// Beside throughput, each server's own CPU time per request (from /proc) is compared the same
// way: on a shared machine it moves far less with other load than requests/s do. Then where the
// extra CPU runs (the main thread, or V8's compiler and collector threads), and, beside it, the
// SDK's own cost of a span in a bare process (scripts/span-cost.mjs, exporting to the same
// receiver) times the spans each workload made: how much of tracing's cost the spans explain.
// With BENCH_TRACING_ON_BEFORE_ROOT (another built checkout) that build's server runs traced in
// place of "off": a change to tracing's own cost, measured traced against traced.
// Every answer's status is checked. Needs local PostgreSQL and Redis. `npm run build` first.
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootServer, countStatus, cpuMs, database, mainThreadCpuMs, dispatcherStandIn, emitFigure, freePort, interleaved, mergeStatuses, percentile, premises, productionServices, requireStatuses, root, secret, spread, tally, postStatus } from './bench-lib.mjs';

const count = Number(process.env.BENCH_TRACING_REQUESTS ?? 1000);
const connections = Number(process.env.BENCH_TRACING_CONNECTIONS ?? 32);
// Short runs, many of them: on a shared machine the load moves within seconds.
const rounds = Number(process.env.BENCH_TRACING_ROUNDS ?? 7);
const beforeRoot = process.env.BENCH_TRACING_BEFORE_ROOT;
// The root of another build (built there): its server runs traced in place of "off", so a change
// to tracing's own cost is measured traced against traced. Not for `npm run bench`'s table.
const onBeforeRoot = process.env.BENCH_TRACING_ON_BEFORE_ROOT;
const FORGE_SECRET = secret();
const TARGET = 0.85;
// OTLP/HTTP JSON unless BENCH_TRACING_PROTOCOL=http/protobuf (the SDK's default encoding).
const protocol = process.env.BENCH_TRACING_PROTOCOL ?? 'http/json';

function forgePush() {
  const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID(), repository: { full_name: 'bench/traced' }, pusher: { name: 'bench' } });
  const signature = `sha256=${createHmac('sha256', FORGE_SECRET).update(body).digest('hex')}`;
  return { path: '/api/v1/webhooks/', body, headers: { 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature } };
}

const taskBody = JSON.stringify({ agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, timeout_seconds: 600, brief: { prompt: 'bench' } });

/** `total` POSTs over `width` keep-alive connections; rate, p50, p99 and the statuses. */
async function load(base, total, request) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies = [];
  const statuses = new Map();
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < total) {
      next++;
      const { path: target, body, headers } = request();
      const t0 = performance.now();
      countStatus(statuses, await postStatus(agent, `${base}${target}`, body, headers).catch(() => 'error'));
      latencies.push(performance.now() - t0);
    }
  }));
  agent.destroy();
  return { rate: total / ((performance.now() - started) / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99), statuses };
}


async function startReceiver() {
  const child = spawn(process.execPath, [path.join(root, 'test/harness/otlp-receiver.mjs')], { env: { ...process.env, OTLP_RECEIVER_COUNT_ONLY: 'true' }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = await once(child.stdout, 'data');
  const url = `http://127.0.0.1:${chunk.toString().trim()}`;
  return { url, spans: async () => (await (await fetch(`${url}/count`)).json()).spans, stop: () => child.kill('SIGTERM') };
}

/** A controller with its workflow; `serverRoot` picks the build (this one, or BENCH_TRACING_BEFORE_ROOT). */
async function controller(name, services, env, serverRoot = root) {
  const db = await database();
  if (!db.url) throw new Error('bench-tracing needs local PostgreSQL (127.0.0.1:5432, user postgres)');
  const port = await freePort();
  const token = secret();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), `bench-tracing-${name}-`));
  const server = await bootServer({
    ...services.env, S3_BUCKET: `${services.env.S3_BUCKET}-${name}`, ROLE: 'controller', NODE_ENV: 'development', DATA_DIR: dataDir, DATABASE_URL: db.url,
    CONTROLLER_PORT: String(port), API_TOKEN: token, FORGE_WEBHOOK_SECRET: FORGE_SECRET, ...env,
  }, `${base}/health/`, serverRoot);
  const workflow = {
    id: 'bench-traced', triggers: [{ source: 'forge', event: 'push', filter: { 'repository.full_name': 'bench/traced' } }],
    task_template: { agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, timeout_seconds: 600, brief: { after: '{{payload.after}}' } },
  };
  const created = await fetch(`${base}/api/v1/workflows/`, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(workflow) });
  if (created.status !== 201) throw new Error(`workflow not created on ${name}: ${created.status}`);
  const createTask = () => ({ path: '/api/v1/tasks/', body: taskBody, headers: { authorization: `Token ${token}` } });
  // A consumer online: the dispatch loop sends each stored task out during the runs, as in production.
  const consumer = await dispatcherStandIn(base, token);
  return {
    name, base, createTask, pid: server.child.pid, taken: () => consumer.tokens.size, stored: 0,
    stop: async () => {
      consumer.close();
      await server.stop();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const ms = (value) => `${value.toFixed(1)} ms`;
const pct = (value) => `${(100 * value).toFixed(0)}%`;

/** Interleaved runs of `measured` beside `baseline` for one workload; prints and emits the figure. */
async function compare(label, workload, baseline, measured, target, expected) {
  // Each run ends when the server has handed every task it stored to the consumer: the CPU of
  // that hand-off is the run's own, and no run is slowed by a backlog the other server left.
  const run = (server) => async () => {
    const cpuBefore = cpuMs(server.pid);
    const mainBefore = mainThreadCpuMs(server.pid);
    const figures = await load(server.base, count, workload(server));
    server.stored += figures.statuses.get(expected) ?? 0;
    const drained = await drain(server);
    return { ...figures, drained, cpuPerRequest: (cpuMs(server.pid) - cpuBefore) / count, mainPerRequest: (mainThreadCpuMs(server.pid) - mainBefore) / count };
  };
  const { runs, baselines, ratios } = await interleaved(rounds, run(baseline), run(measured));
  const shares = ratios((figures) => figures.rate);
  const middle = [...shares.keys()].sort((a, b) => shares[a] - shares[b])[Math.floor(shares.length / 2)];
  const measuredStatuses = mergeStatuses(...runs.map((r) => r.statuses));
  const ok = requireStatuses(`${label} (${measured.name})`, measuredStatuses, [expected])
    && requireStatuses(`${label} (${baseline.name})`, mergeStatuses(...baselines.map((r) => r.statuses)), [expected]);
  console.log(`${label}: ${measured.name} ${spread(runs.map((r) => r.rate))} requests/s, ${baseline.name} ${spread(baselines.map((r) => r.rate))} requests/s`);
  console.log(`   p50 / p99: ${measured.name} ${ms(median(runs, 'p50'))} / ${ms(median(runs, 'p99'))}, ${baseline.name} ${ms(median(baselines, 'p50'))} / ${ms(median(baselines, 'p99'))} (medians over runs); statuses of ${measured.name}: ${tally(measuredStatuses)}`);
  console.log(`   hand-off of the stored tasks after the last request: ${measured.name} ${ms(median(runs, 'drained'))}, ${baseline.name} ${ms(median(baselines, 'drained'))} (medians; CPU per request includes it)`);
  console.log(`   ${measured.name} / ${baseline.name} beside it: ${spread(shares, pct)} (target >= ${pct(target)})`);
  const reference = (baselines[middle].rate + baselines[middle + 1].rate) / 2;
  emitFigure({ figure: `${label}, ${measured.name}`, value: `${runs[middle].rate.toFixed(0)} rps`, baseline: `${reference.toFixed(0)} rps ${baseline.name}`, ratio: pct(shares[middle]), target: `>= ${pct(target)}`, met: ok && shares[middle] >= target });
  // The server's own CPU time per request moves far less with the machine's other load than
  // its throughput does: the cost that decides how much a core serves.
  const cpuShares = ratios((figures) => figures.cpuPerRequest);
  const cpuMiddle = [...cpuShares.keys()].sort((a, b) => cpuShares[a] - cpuShares[b])[Math.floor(cpuShares.length / 2)];
  const cpuTarget = 1 / target;
  console.log(`   server CPU per request: ${measured.name} ${spread(runs.map((r) => r.cpuPerRequest), (v) => `${v.toFixed(2)} ms`)}, ${baseline.name} ${spread(baselines.map((r) => r.cpuPerRequest), (v) => `${v.toFixed(2)} ms`)}; ${measured.name} / ${baseline.name} beside it: ${spread(cpuShares, pct)} (target <= ${pct(cpuTarget)})`);
  const cpuReference = (baselines[cpuMiddle].cpuPerRequest + baselines[cpuMiddle + 1].cpuPerRequest) / 2;
  emitFigure({ figure: `${label}, ${measured.name}, server CPU per request`, value: `${runs[cpuMiddle].cpuPerRequest.toFixed(2)} ms`, baseline: `${cpuReference.toFixed(2)} ms ${baseline.name}`, ratio: pct(cpuShares[cpuMiddle]), target: `<= ${pct(cpuTarget)}`, met: ok && cpuShares[cpuMiddle] <= cpuTarget });
  // Where the extra CPU runs: the main thread (JavaScript, the kernel's work for its calls) or V8's other threads (compiler, collector).
  const mainReference = (baselines[cpuMiddle].mainPerRequest + baselines[cpuMiddle + 1].mainPerRequest) / 2;
  const extraMainMs = runs[cpuMiddle].mainPerRequest - mainReference;
  console.log(`   of it, on the main thread: ${measured.name} ${runs[cpuMiddle].mainPerRequest.toFixed(2)} ms, ${baseline.name} ${mainReference.toFixed(2)} ms (the run at the median and its neighbours)`);
  return { label, extraCpuMs: runs[cpuMiddle].cpuPerRequest - cpuReference, extraMainMs };
}

/**
 * The SDK's own cost of a span in a bare process (scripts/span-cost.mjs, exporting to the same
 * receiver), beside what tracing added to each request: how much of it the spans themselves
 * explain, and how much is the rest (context, propagation, instrumentations, the collector).
 */
async function spanFloor(receiverUrl, extras) {
  const child = spawn(process.execPath, [path.join(root, 'scripts/span-cost.mjs')], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiverUrl}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks = [];
  child.stdout.on('data', (chunk) => chunks.push(chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`span-cost.mjs exited with ${code}`);
  const floor = JSON.parse(Buffer.concat(chunks).toString('utf8').trim().split('\n').at(-1));
  console.log(`the SDK alone (scripts/span-cost.mjs, a bare process): ${floor.startToEndMicros.toFixed(1)} µs of CPU a span start to end, ${floor.withExportMicros.toFixed(1)} µs with its export`);
  for (const { label, extraCpuMs, extraMainMs, spansPerRequest } of extras) {
    const spansWorth = spansPerRequest * floor.withExportMicros / 1000;
    console.log(`   ${label}: tracing added ${(extraCpuMs * 1000).toFixed(0)} µs of server CPU a request (${(extraMainMs * 1000).toFixed(0)} µs on the main thread); ${spansPerRequest.toFixed(1)} spans a request at the SDK's own cost are ${(spansWorth * 1000).toFixed(0)} µs of it`);
  }
}

const median = (runs, key) => percentile(runs.map((r) => r[key]), 50);

/** Waits until the consumer has taken every task the server stored; answers the wait in ms. */
async function drain(server, limitMs = 120_000) {
  const started = performance.now();
  while (server.taken() < server.stored) {
    if (performance.now() - started > limitMs) throw new Error(`${server.name}: ${server.stored - server.taken()} stored tasks not dispatched within ${limitMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - started;
}

async function main() {
  const services = await productionServices();
  const receiver = await startReceiver();
  const servers = [];
  try {
    const tracing = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
      OTEL_TRACES_SAMPLER: 'always_on', OTEL_BSP_MAX_QUEUE_SIZE: '262144',
    };
    const off = onBeforeRoot ? await controller('before-on', services, tracing, onBeforeRoot) : await controller('off', services, {});
    servers.push(off);
    const on = await controller('on', services, tracing);
    servers.push(on);
    premises(`${count} requests per run over ${connections} keep-alive connections, ${rounds} runs of each server interleaved with the other's`,
      'ROLE=controller on local PostgreSQL (a database each)', services.statement,
      'a dispatcher stand-in checked in at each controller takes every task at once (no agent runs)', `tracing on: every span sampled and exported over OTLP/HTTP (${protocol}) to a receiver process on loopback`,
      ...(onBeforeRoot ? [`BENCH_TRACING_ON_BEFORE_ROOT: the baseline is the build at ${onBeforeRoot}, traced the same way (its figures are this build's tracing cost over that one's, not over off)`] : []),
      beforeRoot ? `before: the build at ${beforeRoot}, compared with a fresh "off" server afterwards` : 'BENCH_TRACING_BEFORE_ROOT not set: no pre-tracing build compared');
    const webhook = () => forgePush;
    const postTask = (server) => server.createTask;
    const spansBefore = await receiver.spans();
    // Each workload's spans, counted once the batch processor's schedule delay (5 s) has passed.
    const withSpans = async (compared) => {
      const before = await receiver.spans();
      const extra = await compared();
      await new Promise((resolve) => setTimeout(resolve, 6000));
      return { ...extra, spansPerRequest: ((await receiver.spans()) - before) / (rounds * count) };
    };
    const extras = [
      await withSpans(() => compare('routed webhook ingest (200)', webhook, off, on, TARGET, 200)),
      await withSpans(() => compare('task creation, POST /api/v1/tasks/ (201)', postTask, off, on, TARGET, 201)),
    ];
    const spans = (await receiver.spans()) - spansBefore;
    // Both servers export with BENCH_TRACING_ON_BEFORE_ROOT: the receiver's count is theirs together.
    if (!onBeforeRoot) {
      console.log(`spans received from "on": ${spans}, ${(spans / (2 * rounds * count)).toFixed(1)} per request`);
      await spanFloor(receiver.url, extras);
    }
    // "off" ran one run more of each section than "on" (its runs are on both sides of each of "on"'s).
    console.log(`tasks dispatched to the consumer: off ${off.taken()} of ${off.stored} stored, on ${on.taken()} of ${on.stored}`);
    if (beforeRoot) {
      // Fresh servers: the pending tasks a server has stored (no dispatcher takes them) weigh on
      // its later requests, so both sides start from empty databases and grow in step.
      for (const server of servers.splice(0)) await server.stop();
      const fresh = await controller('off', services, {});
      servers.push(fresh);
      const before = await controller('before', services, {}, beforeRoot);
      servers.push(before);
      await compare('routed webhook ingest (200)', webhook, before, fresh, 0.95, 200);
      await compare('task creation, POST /api/v1/tasks/ (201)', postTask, before, fresh, 0.95, 201);
    }
  } finally {
    for (const server of servers) await server.stop().catch(() => undefined);
    receiver.stop();
    await services.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
