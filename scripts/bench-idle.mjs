#!/usr/bin/env node
// A server at rest: CPU a second of the all-in-one server with nothing to do (its dispatcher
// online and heartbeating, production services), beside a bare node:http server at rest
// (the least a Node process that listens costs) and beside the same server with the event
// loop sampled at prom-client's default of 10 ms (METRICS_EVENT_LOOP_RESOLUTION_MS=10) rather
// than the server's default. The three are booted one after another, left alone for
// BENCH_IDLE_SETTLE_SECONDS (40: past the garbage collections that shrink the heap after a
// boot), then read together from /proc (user + system) over BENCH_IDLE_WINDOWS windows of 5 s.
// Prints each one's median and spread of the windows; no target is attached (informational).
//
//   BENCH_IDLE_SETTLE_SECONDS=40 BENCH_IDLE_WINDOWS=6 BENCH_IDLE_MAIN=<checkout>/dist/src/main.js (another build at its defaults, beside the others)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootAllInOne, cpuMs, database, premises, productionServices, runBenchScript, spread } from './bench-lib.mjs';

const settleSeconds = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 40);
const windows = Number(process.env.BENCH_IDLE_WINDOWS ?? 6);
const WINDOW_MS = 5000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A bare node:http server listening on loopback and doing nothing else. */
async function bareServer() {
  const child = spawn(process.execPath, ['-e', "require('node:http').createServer((q, s) => s.end()).listen(0, '127.0.0.1', () => console.log('up'))"], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return { child, stop: async () => { child.kill('SIGTERM'); await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve))); } };
}

async function main() {
  const services = await productionServices();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-idle-'));
  const databases = [];
  const running = [];
  try {
    premises(services.statement, 'ROLE=all with its dispatcher online (heartbeats every 2 s), nothing posted; PostgreSQL (local, a fresh database each)');
    const boot = async (name, env, main) => {
      const db = await database();
      if (!db.url) throw new Error('bench-idle needs local PostgreSQL (127.0.0.1:5432, user postgres)');
      databases.push(db);
      const server = await bootAllInOne({ services, databaseUrl: db.url, dataDir: path.join(work, name), env, main });
      running.push({ name, pid: server.child.pid, stop: server.stop });
    };
    const bare = await bareServer();
    running.push({ name: 'bare node:http server (baseline)', pid: bare.child.pid, stop: bare.stop });
    await boot('all role, defaults', {});
    await boot('all role, METRICS_EVENT_LOOP_RESOLUTION_MS=10', { METRICS_EVENT_LOOP_RESOLUTION_MS: '10' });
    if (process.env.BENCH_IDLE_MAIN) await boot(`all role, defaults, ${process.env.BENCH_IDLE_MAIN}`, {}, process.env.BENCH_IDLE_MAIN);
    console.log(`settling ${settleSeconds} s, then ${windows} windows of ${WINDOW_MS / 1000} s`);
    await sleep(settleSeconds * 1000);
    const samples = running.map(() => []);
    let before = running.map((server) => cpuMs(server.pid));
    for (let window = 0; window < windows; window++) {
      const t0 = performance.now();
      await sleep(WINDOW_MS);
      const seconds = (performance.now() - t0) / 1000;
      const now = running.map((server) => cpuMs(server.pid));
      now.forEach((value, i) => samples[i].push((value - before[i]) / seconds));
      before = now;
    }
    for (const [i, server] of running.entries()) {
      console.log(`  ${server.name}: CPU at rest ${spread(samples[i], (value) => `${value.toFixed(1)} ms/s`)} (${(Math.min(...samples[i]) / 10).toFixed(2)} to ${(Math.max(...samples[i]) / 10).toFixed(2)}% of one core)`);
    }
  } finally {
    for (const server of running) await server.stop().catch(() => undefined);
    for (const db of databases) await db.drop().catch(() => undefined);
    await services.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
