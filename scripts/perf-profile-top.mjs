#!/usr/bin/env node
// The top frames of one thread from `perf script` output: on-CPU samples only, unlike V8's
// `--cpu-prof`, whose sampler stamps the time a thread spent waiting for a core onto the frame it
// resumes in (on a loaded machine, mostly `writev`: the statement just sent woke PostgreSQL,
// which took the core). Per sample the first JavaScript frame counts as self (a V8 builtin or
// native call below it counts for that frame), every JavaScript frame on the stack as inclusive,
// and the package or file of the first frame as the package. Samples with no JavaScript frame
// are `(no js)` with their top native or kernel symbol.
//
//   node --perf-basic-prof dist/src/main.js ...        (the server; BENCH_SERVER_NODE_ARGS='--perf-basic-prof' for a bench)
//   perf record -F 499 -g -p <pid> -o /tmp/perf.data -- sleep 30   (perf: Debian's linux-perf package)
//   perf script -i /tmp/perf.data --tid <pid> > /tmp/perf.txt
//   node scripts/perf-profile-top.mjs /tmp/perf.txt <pid> [from seconds] [to seconds] [inclusive rows=60]
import { readFileSync } from 'node:fs';

const [file, tid, from = '0', to = '1e9', inclusiveRows = '60'] = process.argv.slice(2);
if (!file || !tid) throw new Error('usage: perf-profile-top.mjs <perf script output> <thread id> [from s] [to s] [inclusive rows]');
const HEADER = /^\s*\S+\s+(\d+)(?:\/(\d+))?(?:\s+\[\d+\])?\s+([\d.]+):/;
const frameName = (line) => line.trim().split(' ').slice(1).join(' ');
const clean = (frame) => frame.replace(/\+0x[0-9a-f]+ .*$/, '').replace(/^JS:[*^~+]?/, '');
function packageOf(frame) {
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(frame);
  if (module) return `nm/${module[1]}`;
  const own = /dist\/(src\/[^:]+)/.exec(frame);
  if (own) return own[1];
  return /(node:[^:]+)/.exec(frame)?.[1] ?? 'other';
}

const self = new Map();
const inclusive = new Map();
const packages = new Map();
const perSecond = new Map();
const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
let start;
let samples = 0;
for (const block of readFileSync(file, 'utf8').split('\n\n')) {
  const lines = block.split('\n').filter(Boolean);
  const head = HEADER.exec(lines[0] ?? '');
  if (!head || (head[2] ?? head[1]) !== tid) continue;
  const time = Number(head[3]);
  start ??= time;
  add(perSecond, Math.floor(time - start));
  if (time - start < Number(from) || time - start > Number(to)) continue;
  samples++;
  const frames = lines.slice(1).map(frameName);
  const js = frames.filter((frame) => frame.startsWith('JS:'));
  add(self, js[0] ? clean(js[0]) : `(no js) ${clean(frames[0] ?? '?')}`);
  add(packages, js[0] ? packageOf(js[0]) : '(no js)');
  for (const frame of new Set(js.map(clean))) add(inclusive, frame);
}

const show = (title, map, rows) => {
  console.log(`--- ${title}`);
  for (const [key, count] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(`${String(count).padStart(6)} ${((100 * count) / samples).toFixed(1).padStart(5)}%  ${key.slice(0, 140)}`);
  }
};
console.log(`samples per second: ${[...perSecond].map(([second, count]) => `${second}:${count}`).join(' ')}`);
console.log(`samples in the window: ${samples}`);
show('by package or file (first JavaScript frame)', packages, 40);
show('self (first JavaScript frame)', self, 40);
show('inclusive', inclusive, Number(inclusiveRows));
