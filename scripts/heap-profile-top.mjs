#!/usr/bin/env node
// The largest allocators of a sampling heap profile (scripts/heap-sampler.mjs, or any
// .heapprofile): bytes by package or file, bytes by function (self), and, with CALLERS=<text>,
// the call paths (DEPTH frames, 6) under which the functions whose name contains <text> allocate.
//
//   node scripts/heap-profile-top.mjs <file.heapprofile> [rows=30]
import { readFileSync } from 'node:fs';

const [file, rowsArg] = process.argv.slice(2);
if (!file) throw new Error('usage: heap-profile-top.mjs <file.heapprofile> [rows]');
const rows = Number(rowsArg ?? 30);
const { head } = JSON.parse(readFileSync(file, 'utf8'));
const short = (url) => url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/');
const frame = ({ functionName, url, lineNumber }) => `${functionName || '(anonymous)'} ${short(url)}:${lineNumber + 1}`;
const owner = (url) => (url.includes('node_modules/') ? url.replace(/.*node_modules\/((@[^/]+\/)?[^/]+).*/, '$1') : short(url) || '(native)');

const bySelf = new Map();
const byOwner = new Map();
const callers = new Map();
const wanted = process.env.CALLERS;
const depth = Number(process.env.DEPTH ?? 6);
let total = 0;
(function walk(node, stack) {
  const name = frame(node.callFrame);
  const path = [...stack, name];
  if (node.selfSize > 0) {
    total += node.selfSize;
    bySelf.set(name, (bySelf.get(name) ?? 0) + node.selfSize);
    byOwner.set(owner(node.callFrame.url), (byOwner.get(owner(node.callFrame.url)) ?? 0) + node.selfSize);
    if (wanted && name.includes(wanted)) {
      const key = path.slice(-depth).reverse().join('\n    < ');
      callers.set(key, (callers.get(key) ?? 0) + node.selfSize);
    }
  }
  for (const child of node.children) walk(child, path);
})(head, []);

const mb = (bytes) => `${(bytes / 1e6).toFixed(1).padStart(8)} MB ${((100 * bytes) / total).toFixed(1).padStart(5)}%`;
const top = (map, count) => [...map].sort((a, b) => b[1] - a[1]).slice(0, count);
console.log(`sampled: ${(total / 1e6).toFixed(1)} MB`);
console.log('\nby package or file:');
for (const [name, bytes] of top(byOwner, rows)) console.log(`${mb(bytes)}  ${name}`);
console.log('\nby function (self):');
for (const [name, bytes] of top(bySelf, rows)) console.log(`${mb(bytes)}  ${name}`);
if (wanted) {
  console.log(`\ncall paths of ${wanted}:`);
  for (const [key, bytes] of top(callers, 10)) console.log(`${mb(bytes)}  ${key}\n`);
}
