#!/usr/bin/env node
// Outbound events on real PostgreSQL (issue 25: no target, the added creation cost is the
// figure). BENCH_SUBSCRIPTION_EVENTS (2000) task creations from BENCH_SUBSCRIPTION_CLIENTS (16)
// keep-alive clients at the all-in-one server, its dispatcher online and consuming (each task
// stored, dispatched, its brief written to s3rver and its agent, scripts/bench-agent.sh, run),
// LOG_LEVEL=info with its access log, Redis. Each run on a fresh database:
//  A. baseline, with no subscription: creations/s, p50, p99;
//  B. with BENCH_SUBSCRIPTION_COUNT (10) subscriptions to task.created, each its own path of
//     a receiver on loopback that answers 200: the same creation figures (the added cost of
//     the fan-out is B beside A), and the delivery rate: every event to every subscription,
//     from the first creation to the last delivery, with the time the outbox took to drain
//     after the last creation, and any delivery received twice.
// BENCH_SUBSCRIPTION_ROUNDS (3) runs of B, interleaved with runs of A (A, B, A, B, ..., A): each
// B is compared with the mean of the A runs beside it; median and spread printed. Any answer
// but 201, or a delivery missing after BENCH_SUBSCRIPTION_WAIT_SECONDS (900), fails the run.
// Needs local PostgreSQL (127.0.0.1:5432, user postgres) and Redis. `npm run build` first.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { allInOneConsumer, BENCH_AGENT_IMAGE, bootAllInOne, countStatus, database, emitFigure, freePort, interleaved, median, mergeStatuses, percentile, premises, productionServices, requireStatuses, rssSampler, runBenchScript, secret, spread, tally } from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const events = env('BENCH_SUBSCRIPTION_EVENTS', 2_000);
const rounds = env('BENCH_SUBSCRIPTION_ROUNDS', 3);
const subscriptions = env('BENCH_SUBSCRIPTION_COUNT', 10);
const clients = env('BENCH_SUBSCRIPTION_CLIENTS', 16);
const waitSeconds = env('BENCH_SUBSCRIPTION_WAIT_SECONDS', 900);
const TASK = JSON.stringify({
  agent_image: BENCH_AGENT_IMAGE, runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 60, brief: { prompt: 'bench' },
});

function post(agent, url, headers, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (answer) => {
      const chunks = [];
      answer.on('data', (chunk) => chunks.push(chunk));
      answer.on('end', () => resolve({ status: answer.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** A receiver counting deliveries per path and the webhook-ids it saw. */
async function startReceiver() {
  const seen = new Set();
  const state = { received: 0, duplicates: 0, last: 0 };
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const key = `${request.url} ${request.headers['webhook-id']}`;
      if (seen.has(key)) state.duplicates += 1;
      else seen.add(key);
      state.received += 1;
      state.last = Date.now();
      response.writeHead(200).end('ok');
    });
  });
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, state, unique: () => seen.size, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

async function run(subscriptionCount, services) {
  const receiver = await startReceiver();
  const db = await database();
  if (!db.url) throw new Error('bench-subscriptions needs local PostgreSQL (127.0.0.1:5432, user postgres)');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'atc-bench-subs-'));
  const server = await bootAllInOne({ services, databaseUrl: db.url, dataDir, env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.1/32', SECRET_KEY: secret() } });
  const base = server.controller;
  const token = server.token;
  const rss = rssSampler(server.child.pid);
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const headers = { authorization: `Token ${token}` };
  try {
    for (let n = 0; n < subscriptionCount; n++) {
      const answer = await post(agent, `${base}/api/v1/subscriptions/`, headers, JSON.stringify({ url: `${receiver.url}/hooks/${n}`, event_types: ['task.created'] }));
      if (answer.status !== 201) throw new Error(`subscription answered ${answer.status}: ${answer.body}`);
    }
    const latencies = [];
    let next = 0;
    const statuses = new Map();
    const started = Date.now();
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < events) {
        next += 1;
        const at = performance.now();
        const answer = await post(agent, `${base}/api/v1/tasks/`, headers, TASK).catch(() => ({ status: 'error' }));
        latencies.push(performance.now() - at);
        countStatus(statuses, answer.status);
      }
    }));
    const created = Date.now();
    const expected = events * subscriptionCount;
    const deadline = Date.now() + waitSeconds * 1000;
    while (receiver.unique() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    return {
      creationsPerSecond: events / ((created - started) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      statuses,
      delivered: receiver.unique(),
      expected,
      deliverySeconds: expected ? (receiver.state.last - started) / 1000 : 0,
      drainSeconds: expected ? Math.max(0, receiver.state.last - created) / 1000 : 0,
      duplicates: receiver.state.duplicates,
      peakRss: rss.stop(),
    };
  } finally {
    agent.destroy();
    await server.stop();
    await receiver.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const services = await productionServices();
  try {
    premises(services.statement, 'PostgreSQL (local, a fresh database per run)', `consumer: ${allInOneConsumer()}`);
    console.log(`${events} task creations per run, ${clients} keep-alive clients; ${rounds} runs with ${subscriptions} subscriptions, each between two runs with none`);
    const { runs, baselines, ratios } = await interleaved(rounds, () => run(0, services), () => run(subscriptions, services));
    const line = (name, list) => {
      console.log(`${name}: creations/s ${spread(list.map((r) => r.creationsPerSecond))}`);
      console.log(`   p50 ${spread(list.map((r) => r.p50), (v) => `${v.toFixed(1)} ms`)}; p99 ${spread(list.map((r) => r.p99), (v) => `${v.toFixed(1)} ms`)}; peak RSS ${spread(list.map((r) => r.peakRss), (v) => `${v.toFixed(0)} MiB`)}`);
    };
    line('A. no subscription (baseline)', baselines);
    line(`B. ${subscriptions} subscriptions`, runs);
    const shares = ratios((r) => r.creationsPerSecond);
    const pct = (value) => `${(100 * value).toFixed(0)}%`;
    console.log(`   B's creations/s as a share of the A runs beside it (the fan-out's cost on the create path): ${spread(shares, pct)}`);
    for (const [i, r] of runs.entries()) {
      console.log(`   B run ${i + 1} deliveries: ${r.delivered} of ${r.expected} in ${r.deliverySeconds.toFixed(1)} s from the first creation = ${(r.delivered / r.deliverySeconds).toFixed(0)}/s; outbox drained ${r.drainSeconds.toFixed(1)} s after the last creation; received twice: ${r.duplicates}`);
    }
    const statuses = mergeStatuses(...runs.map((r) => r.statuses), ...baselines.map((r) => r.statuses));
    console.log(`   answers to the creations: ${tally(statuses)}`);
    const answered = requireStatuses('task creations', statuses, [201]);
    const delivered = runs.every((r) => r.delivered >= r.expected);
    if (!delivered) {
      console.log('   FAILED: deliveries missing (see above)');
      process.exitCode = 1;
    }
    emitFigure({
      figure: `task creations with ${subscriptions} subscriptions (issue 25)`, value: `${median(runs.map((r) => r.creationsPerSecond)).toFixed(0)}/s`,
      baseline: `${median(baselines.map((r) => r.creationsPerSecond)).toFixed(0)}/s with none`, ratio: pct(median(shares)),
      target: 'none (the added cost, shown); every event delivered', met: answered && delivered,
    });
  } finally {
    await services.stop();
  }
}

runBenchScript(main, () => undefined);
