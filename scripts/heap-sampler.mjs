// Where a server's allocations come from, the garbage included: an `--import` preload for the
// benchmarks (docs/performance.md), e.g.
//   BENCH_SERVER_NODE_ARGS="--import $PWD/scripts/heap-sampler.mjs" HEAP_START_S=12 HEAP_STOP_S=27 node scripts/bench-task-cpu.mjs
// From HEAP_START_S (10) to HEAP_STOP_S (30) seconds after the process starts it runs V8's
// sampling heap profiler with the objects collected by either GC kept in the samples (Node's
// own --heap-prof keeps only the objects still alive at its end, which hides a server's
// short-lived garbage), one sample per HEAP_INTERVAL_BYTES (16384), and writes the profile to
// HEAP_OUT (heap-<pid>.heapprofile in the temporary directory). Read it with
// scripts/heap-profile-top.mjs.
import { writeFileSync } from 'node:fs';
import inspector from 'node:inspector';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const session = new inspector.Session();
session.connect();
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
const start = Number(process.env.HEAP_START_S ?? 10);
const stop = Number(process.env.HEAP_STOP_S ?? 30);
const out = process.env.HEAP_OUT ?? path.join(tmpdir(), `heap-${process.pid}.heapprofile`);

setTimeout(async () => {
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.HEAP_INTERVAL_BYTES ?? 16384), includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true,
  });
  setTimeout(async () => {
    const { profile } = await post('HeapProfiler.stopSampling');
    writeFileSync(out, JSON.stringify(profile));
  }, (stop - start) * 1000).unref();
}, start * 1000).unref();
