#!/usr/bin/env node
// Two paths of the all-in-one system, measured from a client on loopback:
//  1. webhook ingest: signed custom deliveries that match no workflow (verify, de-duplicate,
//     route, ledger) — requests per second and latency percentiles;
//  2. tasks end to end: tasks created at the controller, dispatched, run by the echo
//     example agent as local processes, closed by signed callbacks — tasks per second and
//     time to completion, with the server's peak RSS.
//
//   BENCH_DELIVERIES=2000 BENCH_CONCURRENCY=20 BENCH_TASKS=60 BENCH_MAX_CONCURRENT=10
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootServer, database, freePort, percentile, rssSampler, secret } from './bench-lib.mjs';

const deliveries = Number(process.env.BENCH_DELIVERIES ?? 2000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const taskCount = Number(process.env.BENCH_TASKS ?? 60);
const maxConcurrent = Number(process.env.BENCH_MAX_CONCURRENT ?? 10);

async function inParallel(count, width, work) {
  let next = 0;
  const lanes = Array.from({ length: width }, async () => {
    while (next < count) await work(next++);
  });
  await Promise.all(lanes);
}

async function benchWebhooks(controller, webhookSecret) {
  const latencies = [];
  const started = performance.now();
  await inParallel(deliveries, concurrency, async () => {
    const body = JSON.stringify({ type: 'bench.event', data: { id: randomUUID() } });
    const signature = createHmac('sha256', webhookSecret).update(body).digest('hex');
    const t0 = performance.now();
    const answer = await fetch(`${controller}/api/v1/webhooks/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-webhook-source': 'custom',
        'x-webhook-event': 'bench.event',
        'x-webhook-id': randomUUID(),
        'x-webhook-signature': `sha256=${signature}`,
      },
      body,
    });
    await answer.arrayBuffer();
    if (answer.status !== 202) throw new Error(`webhook answered ${answer.status}`);
    latencies.push(performance.now() - t0);
  });
  const seconds = (performance.now() - started) / 1000;
  console.log(`webhook ingest: ${deliveries} signed deliveries, ${concurrency} at a time`);
  console.log(`  ${(deliveries / seconds).toFixed(0)} deliveries/s; latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`);
}

async function benchTasks(controller, token) {
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const started = performance.now();
  const guids = [];
  for (let i = 0; i < taskCount; i++) {
    const answer = await fetch(`${controller}/api/v1/tasks/`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        agent_image: 'agent-examples/echo',
        runtime_target: { type: 'local', namespace: '' },
        resources: { cpu: '100m', memory: '128Mi' },
        timeout_seconds: 300,
        brief: { n: i },
      }),
    });
    const body = await answer.json();
    if (answer.status !== 201) throw new Error(`create task: ${answer.status} ${JSON.stringify(body)}`);
    guids.push(body.guid);
  }
  const createdIn = performance.now() - started;
  const finished = new Map();
  while (finished.size < guids.length) {
    for (const guid of guids) {
      if (finished.has(guid)) continue;
      const task = await (await fetch(`${controller}/api/v1/tasks/${guid}/`, { headers })).json();
      if (['completed', 'failed', 'timed_out', 'cancelled'].includes(task.status)) finished.set(guid, task.status);
    }
    if (performance.now() - started > 600_000) throw new Error('tasks did not finish within 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const seconds = (performance.now() - started) / 1000;
  const completed = [...finished.values()].filter((status) => status === 'completed').length;
  console.log(`tasks end to end: ${taskCount} echo-agent tasks as local processes, MAX_CONCURRENT_TASKS=${maxConcurrent}`);
  console.log(`  created in ${createdIn.toFixed(0)} ms; all final after ${seconds.toFixed(1)} s (${(taskCount / seconds).toFixed(2)} tasks/s); ${completed}/${taskCount} completed`);
}

async function main() {
  const db = await database();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-tasks-'));
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const token = secret();
  const webhookSecret = secret();
  const controller = `http://127.0.0.1:${controllerPort}`;
  const server = await bootServer(
    {
      ROLE: 'all', NODE_ENV: 'development', DATA_DIR: path.join(work, 'data'), DATABASE_URL: db.url ?? '',
      CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort), API_TOKEN: token,
      CUSTOM_WEBHOOK_SECRET: webhookSecret, MAX_CONCURRENT_TASKS: String(maxConcurrent), HEARTBEAT_INTERVAL_SECONDS: '2',
    },
    `${controller}/health/`,
  );
  try {
    console.log(`database: ${db.url ? 'PostgreSQL' : 'embedded PGlite'}; cache: memory; objects: folder`);
    const sampler = rssSampler(server.child.pid);
    await benchWebhooks(controller, webhookSecret);
    await benchTasks(controller, token);
    console.log(`  server RSS peak: ${sampler.stop().toFixed(0)} MiB (both roles in one process)`);
  } finally {
    await server.stop();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
