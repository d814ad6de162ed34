#!/usr/bin/env node
// The top frames of a V8 CPU profile (`node --cpu-prof`): self time by function, self time by
// package or file, and inclusive time by function, idle left out. FROM and TO (seconds from the
// profile's start) cut the window, e.g. FROM=12 to leave the boot out; TIMELINE=1 first prints the
// busy milliseconds of each second, to find where the boot ends.
//
//   node scripts/cpu-profile-top.mjs <file.cpuprofile> [rows=30] [inclusive rows=60]
import { readFileSync } from 'node:fs';

const [file, rowsArg, inclusiveArg] = process.argv.slice(2);
if (!file) throw new Error('usage: cpu-profile-top.mjs <file.cpuprofile> [rows] [inclusive rows]');
const rows = Number(rowsArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const from = Number(process.env.FROM ?? 0) * 1e6;
const to = Number(process.env.TO ?? 1e9) * 1e6;
const timeOf = new Map();
const perSecond = new Map();
let clock = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  clock += delta;
  const second = Math.floor(clock / 1e6);
  if (byId.get(id).callFrame.functionName !== '(idle)') perSecond.set(second, (perSecond.get(second) ?? 0) + delta / 1000);
  if (clock >= from && clock <= to) timeOf.set(id, (timeOf.get(id) ?? 0) + delta);
});
if (process.env.TIMELINE) console.log([...perSecond].map(([second, ms]) => `${second}:${ms.toFixed(0)}`).join(' '));

const short = (url) => url.replace(/.*node_modules\//, 'nm/').replace(/.*\/dist\//, 'dist/');
const nameOf = (frame) => `${frame.functionName || '(anonymous)'} ${short(frame.url)}:${frame.lineNumber}`;
function packageOf(url, name) {
  if (url.includes('node_modules/')) {
    const rest = url.split('node_modules/').pop().split('/');
    return `nm/${rest.slice(0, rest[0].startsWith('@') ? 2 : 1).join('/')}`;
  }
  return url ? short(url) : name;
}

const self = new Map();
const byPackage = new Map();
const inclusive = new Map();
let total = 0;
let idle = 0;
const add = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value);
for (const [id, time] of timeOf) {
  const frame = byId.get(id).callFrame;
  total += time;
  if (frame.functionName === '(idle)') {
    idle += time;
    continue;
  }
  add(self, nameOf(frame), time);
  add(byPackage, packageOf(frame.url, frame.functionName), time);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const name = nameOf(byId.get(at).callFrame);
    if (!seen.has(name)) add(inclusive, name, time);
    seen.add(name);
  }
}
const ms = (time) => `${(time / 1000).toFixed(0).padStart(7)} ms`;
const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, time]) => `${ms(time)}  ${name}`).join('\n');
console.log(`window ${ms(total)}, idle ${ms(idle)}, busy ${ms(total - idle)}`);
console.log(`--- self time by function\n${top(self, rows)}`);
console.log(`--- self time by package or file\n${top(byPackage, rows)}`);
console.log(`--- inclusive time by function\n${top(inclusive, Number(inclusiveArg ?? 60))}`);
