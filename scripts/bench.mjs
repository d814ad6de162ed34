#!/usr/bin/env node
// Runs every benchmark script in turn; each prints its own figures.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { root } from './bench-lib.mjs';

const scripts = ['bench-tasks.mjs', 'bench-skills.mjs', 'bench-pipeline.mjs', 'bench-ingest.mjs', 'bench-lists.mjs', 'bench-dispatcher-start.mjs', 'bench-streams.mjs'];
let failed = false;
for (const script of scripts) {
  console.log(`\n== ${script}`);
  const result = spawnSync(process.execPath, [path.join(root, 'scripts', script)], { stdio: 'inherit' });
  if (result.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
