#!/usr/bin/env node
// Runs every benchmark script in turn (BENCH_SCRIPTS=a.mjs,b.mjs picks some); each prints its
// own figures, starting with what it runs against. The lines a script marks as figures (bench-lib's emitFigure) are gathered into
// one closing table: figure, baseline, ratio, target, met or not. A script that fails (a
// request answered with an unexpected status included) or a target not met makes the exit code 1.
// Before each script the machine is let settle: a script's aftermath (PostgreSQL's checkpoint
// after a million-row seed, Podman removing containers, V8 shrinking a stopped server's heap)
// would otherwise load the first runs of the next one, whose targets are absolute times. It waits
// until the cores were at least BENCH_SETTLE_IDLE (0.85) idle over 2 s, at most
// BENCH_SETTLE_MAX_SECONDS (120), and prints what it saw before each script.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { root } from './bench-lib.mjs';

const ALL = ['bench-tasks.mjs', 'bench-skills.mjs', 'bench-pipeline.mjs', 'bench-task-cpu.mjs', 'bench-queue.mjs', 'bench-ingest.mjs', 'bench-lists.mjs', 'bench-dispatcher-start.mjs', 'bench-subscriptions.mjs', 'bench-streams.mjs', 'bench-tracing.mjs', 'bench-warm.mjs', 'bench-kube-scale.mjs', 'bench-idle.mjs'];
const scripts = process.env.BENCH_SCRIPTS ? process.env.BENCH_SCRIPTS.split(',').map((name) => name.trim()) : ALL;
const MARK = 'BENCH-FIGURE ';
const SETTLE_IDLE = Number(process.env.BENCH_SETTLE_IDLE ?? 0.85);
const SETTLE_MAX_MS = Number(process.env.BENCH_SETTLE_MAX_SECONDS ?? 120) * 1000;
const SETTLE_WINDOW_MS = 2000;
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

/** The machine's CPU time so far, in clock ticks: idle (I/O wait counts as busy: a flushing disk slows a benchmark too) and all. */
function cpuTicks() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return { idle: fields[3], total: fields.reduce((sum, ticks) => sum + ticks, 0) };
}

/** Waits until a 2 s window saw the cores at least SETTLE_IDLE idle (or SETTLE_MAX_MS passed); says what it saw. */
async function settle() {
  const started = Date.now();
  let idle = 0;
  while (true) {
    const before = cpuTicks();
    await sleep(SETTLE_WINDOW_MS);
    const after = cpuTicks();
    idle = (after.idle - before.idle) / Math.max(1, after.total - before.total);
    const waited = ((Date.now() - started) / 1000).toFixed(0);
    const load = loadavg().map((value) => value.toFixed(2)).join(' ');
    if (idle >= SETTLE_IDLE) return console.log(`settled: the cores ${(idle * 100).toFixed(0)}% idle over 2 s after ${waited} s (load average ${load})`);
    if (Date.now() - started >= SETTLE_MAX_MS) return console.log(`not settled: the cores ${(idle * 100).toFixed(0)}% idle over the last 2 s after ${waited} s (load average ${load}); running anyway`);
  }
}

function run(script) {
  return new Promise((resolve) => {
    const figures = [];
    const child = spawn(process.execPath, [path.join(root, 'scripts', script)], { stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith(MARK)) figures.push({ script, ...JSON.parse(line.slice(MARK.length)) });
      else console.log(line);
    });
    child.on('close', (code) => resolve({ code, figures }));
  });
}

const rows = [];
const failed = [];
for (const script of scripts) {
  console.log(`\n== ${script}`);
  await settle();
  const { code, figures } = await run(script);
  if (code !== 0) failed.push(script);
  rows.push(...figures);
}

const header = ['figure', 'baseline', 'ratio', 'target', 'met'];
const table = rows.map((row) => [`${row.figure}: ${row.value}`, row.baseline, row.ratio, row.target, row.met ? 'yes' : 'NO']);
const widths = header.map((name, i) => Math.max(name.length, ...table.map((cells) => String(cells[i]).length)));
const line = (cells) => cells.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ');
console.log(`\n== summary: ${rows.length} figures from ${scripts.length} scripts (each script prints its own figures, spreads and what it runs against above)`);
console.log(line(header));
console.log(widths.map((width) => '-'.repeat(width)).join('-|-'));
for (const cells of table) console.log(line(cells));
if (failed.length) console.log(`failed scripts: ${failed.join(', ')}`);
process.exitCode = failed.length || rows.some((row) => !row.met) ? 1 : 0;
