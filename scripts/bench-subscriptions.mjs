#!/usr/bin/env node
// Outbound events on real PostgreSQL: BENCH_SUBSCRIPTION_EVENTS (10000) task creations at the
// controller role booted alone (no dispatcher: each task is stored pending and writes one
// task.created event), from BENCH_SUBSCRIPTION_CLIENTS (16) keep-alive clients, run twice:
//  A. with no subscription: creations/s, p50, p99;
//  B. with BENCH_SUBSCRIPTION_COUNT (10) subscriptions to task.created, each its own path of
//     a receiver on loopback that answers 200: the same creation figures (the added cost of
//     the fan-out is B beside A), and the delivery rate: every event to every subscription,
//     from the first creation to the last delivery, with the time the outbox took to drain
//     after the last creation, and any delivery received twice.
// Needs local PostgreSQL (127.0.0.1:5432, user postgres) or BENCH_DATABASE_URL; each run
// gets a fresh database, dropped at the end. `npm run build` first.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootServer, database, freePort, percentile, rssSampler, runBenchScript, secret } from './bench-lib.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const events = env('BENCH_SUBSCRIPTION_EVENTS', 10_000);
const subscriptions = env('BENCH_SUBSCRIPTION_COUNT', 10);
const clients = env('BENCH_SUBSCRIPTION_CLIENTS', 16);
const waitSeconds = env('BENCH_SUBSCRIPTION_WAIT_SECONDS', 900);
const TASK = JSON.stringify({
  agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 60, brief: { prompt: 'bench' },
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

async function run(subscriptionCount, receiver) {
  const db = await database();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'atc-bench-subs-'));
  const port = await freePort();
  const token = secret();
  const base = `http://127.0.0.1:${port}`;
  const server = await bootServer({
    ROLE: 'controller', CONTROLLER_PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: db.url, API_TOKEN: token, SECRET_KEY: secret(),
    CALLBACK_SIGNING_KEY: secret(), DISPATCHER_API_KEY: secret(), SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.1/32', TASK_DISPATCH_RETRY_SECONDS: '3600',
  }, `${base}/health/`);
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
    let failures = 0;
    const started = Date.now();
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < events) {
        next += 1;
        const at = performance.now();
        const answer = await post(agent, `${base}/api/v1/tasks/`, headers, TASK);
        latencies.push(performance.now() - at);
        if (answer.status !== 201) failures += 1;
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
      failures,
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
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const receiver = await startReceiver();
  try {
    const none = await run(0, receiver);
    const fanned = await run(subscriptions, receiver);
    const line = (name, r) => console.log(`${name.padEnd(28)} ${r.creationsPerSecond.toFixed(0).padStart(6)} creations/s   p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms   peak RSS ${r.peakRss.toFixed(0)} MiB`);
    console.log(`${events} task creations, ${clients} clients, controller role alone on local PostgreSQL`);
    line('A. no subscription', none);
    line(`B. ${subscriptions} subscriptions`, fanned);
    const signed = (value, unit) => `${value >= 0 ? '+' : ''}${value.toFixed(1)}${unit}`;
    console.log(`   B beside A (the fan-out's cost on the create path): creations/s ${signed((fanned.creationsPerSecond / none.creationsPerSecond - 1) * 100, ' %')}, p50 ${signed(fanned.p50 - none.p50, ' ms')}, p99 ${signed(fanned.p99 - none.p99, ' ms')}`);
    console.log(`   deliveries: ${fanned.delivered} of ${fanned.expected} in ${fanned.deliverySeconds.toFixed(1)} s from the first creation = ${(fanned.delivered / fanned.deliverySeconds).toFixed(0)}/s; outbox drained ${fanned.drainSeconds.toFixed(1)} s after the last creation; received twice: ${fanned.duplicates}`);
    if (none.failures + fanned.failures > 0 || fanned.delivered < fanned.expected) process.exitCode = 1;
  } finally {
    await receiver.close();
  }
}

runBenchScript(main, () => undefined);
