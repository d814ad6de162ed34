// What the benchmark scripts share: a database, a free port, the built server as a child
// process, its memory, and percentiles.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';
import pg from 'pg';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

export const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** BENCH_DATABASE_URL, else a fresh database on local PostgreSQL, else none (embedded PGlite). */
export async function database() {
  if (process.env.BENCH_DATABASE_URL) return { url: process.env.BENCH_DATABASE_URL, drop: async () => {} };
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', connectionTimeoutMillis: 1500 });
  try {
    await admin.connect();
  } catch {
    return { url: undefined, drop: async () => {} };
  }
  const name = `atc_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

export function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

/** Samples a process's RSS every 10 ms until stopped; returns the peak. */
export function rssSampler(pid) {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // the process ended
    }
  }, 10);
  return { stop: () => (clearInterval(timer), peak) };
}

/**
 * Boots `dist/src/main.js` with the given settings and waits until `healthUrl` answers 200.
 * BENCH_SERVER_NODE_ARGS adds Node options to the server alone, e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof` to profile it under the benchmark's load.
 */
export async function bootServer(env, healthUrl) {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/src/main.js')], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (await fetch(healthUrl).then((r) => r.ok, () => false)) {
      return {
        child,
        stop: async () => {
          child.kill('SIGTERM');
          await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${healthUrl} did not become healthy`);
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

export const median = (values) => percentile(values, 50);

export const secret = () => randomBytes(24).toString('base64url');

/**
 * A bench script's entry: its baseline server when forked with `--baseline-server` (the
 * scripts fork themselves so the baseline runs in a process of its own), else `main`.
 */
export function runBenchScript(main, baselineServer) {
  if (process.argv[2] === '--baseline-server') {
    Promise.resolve().then(baselineServer).catch((error) => {
      console.error(error);
      process.exit(1);
    });
    return;
  }
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
