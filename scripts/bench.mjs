#!/usr/bin/env node
// Runs every benchmark script in turn (BENCH_SCRIPTS=a.mjs,b.mjs picks some); each prints its
// own figures, starting with what it runs against. The lines a script marks as figures (bench-lib's emitFigure) are gathered into
// one closing table: figure, baseline, ratio, target, met or not. A script that fails (a
// request answered with an unexpected status included) or a target not met makes the exit code 1.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { root } from './bench-lib.mjs';

const ALL = ['bench-tasks.mjs', 'bench-skills.mjs', 'bench-pipeline.mjs', 'bench-task-cpu.mjs', 'bench-queue.mjs', 'bench-ingest.mjs', 'bench-lists.mjs', 'bench-dispatcher-start.mjs', 'bench-subscriptions.mjs', 'bench-streams.mjs', 'bench-tracing.mjs', 'bench-warm.mjs', 'bench-kube-scale.mjs', 'bench-idle.mjs'];
const scripts = process.env.BENCH_SCRIPTS ? process.env.BENCH_SCRIPTS.split(',').map((name) => name.trim()) : ALL;
const MARK = 'BENCH-FIGURE ';

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
