#!/usr/bin/env node
// One dispatcher replica holding BENCH_KUBE_TASKS (10,000) agent Jobs running at once on the
// test Kubernetes API server (test/k8s/kube-api-server.ts, compiled here with SWC, run in this
// process on a loopback socket). The server runs no containers: a Job's pod is Running as soon
// as the Job controller would make it, and stays so; the bench then checks each agent in, so
// the dispatcher holds that many `running` tasks. The server sheds load above
// BENCH_KUBE_SERVER_QPS with 429, as API Priority and Fairness would; the dispatcher's own
// limit is KUBE_API_QPS / KUBE_API_BURST (BENCH_KUBE_QPS, BENCH_KUBE_BURST).
//
// Tasks are posted in bursts of BENCH_KUBE_BURST_TASKS (1,000); the next burst waits for every
// pod of the last to run and its agents to check in. Printed:
//  - time to start each burst (first POST to the last pod Running), against the floor its
//    writes need at the configured QPS, and against a bare client-node loop making the same
//    writes through the same token bucket (before the first burst and after the last);
//  - dispatcher memory (V8 heap and RSS, each after a full GC through the inspector) before
//    the first burst and with every task running: growth per running task;
//  - dispatcher CPU (/proc/PID/stat) over BENCH_KUBE_IDLE_SECONDS (30) with nothing changing,
//    with no task and with every task running;
//  - API writes per task life by verb and resource, counted by the API server: the bursts'
//    writes, then those of finishing BENCH_KUBE_FINISH tasks (2,000: check-back, the pod exits,
//    callback, logs stored, 15 s exit grace for any clean-up);
//  - every 429 the API server answered (none wanted) and every POST/check-in status;
//  - per phase (the bare loops, the bursts, the idle readings, the finishing): the requests the
//    server's limit counted against the tokens the dispatcher's bucket gave out (more counted
//    than given would be calls that bypass the bucket), the most that reached the server in
//    any one second, which requests were answered 429, and the longest event-loop stall of the
//    dispatcher and of this process (which serves the API).
//
//   BENCH_KUBE_TASKS=10000 BENCH_KUBE_BURST_TASKS=1000 BENCH_KUBE_QPS=50 BENCH_KUBE_BURST=100 BENCH_KUBE_FINISH=2000
import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import * as path from 'node:path';
import { bootServer, countStatus, cpuMs, database, loadKubeApiServer, emitFigure, freePort, median, percentile, premises, productionServices, requireStatuses, root, runBenchScript, secret, spread, tally } from './bench-lib.mjs';

const taskCount = Number(process.env.BENCH_KUBE_TASKS ?? 10_000);
const burstSize = Number(process.env.BENCH_KUBE_BURST_TASKS ?? 1000);
// The dispatcher's defaults (KUBE_API_QPS 50, KUBE_API_BURST 100): the bursts are timed at what production runs.
const qps = Number(process.env.BENCH_KUBE_QPS ?? 50);
const burst = Number(process.env.BENCH_KUBE_BURST ?? 100);
// Requests a client takes from its bucket reach the server bunched (queued in the HTTP agent, or
// behind a pause of the server's own event loop), so the server's limit keeps a margin over the client's.
const serverQps = Number(process.env.BENCH_KUBE_SERVER_QPS ?? Math.ceil(qps * 1.5));
const serverBurst = Number(process.env.BENCH_KUBE_SERVER_BURST ?? burst * 2);
const idleSeconds = Number(process.env.BENCH_KUBE_IDLE_SECONDS ?? 30);
const finishCount = Math.min(taskCount, Number(process.env.BENCH_KUBE_FINISH ?? 2000));
const LANES = 16;
const NAMESPACE = 'agents';
const require = createRequire(import.meta.url);

const MiB = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** process.memoryUsage() of the dispatcher after two full collections, through its inspector. */
async function memoryAfterGc(inspectPort) {
  const { default: WebSocket } = await import('ws');
  const [target] = await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json();
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await once(socket, 'open');
  let id = 0;
  const pending = new Map();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    pending.get(message.id)?.(message);
  });
  const send = (method, params = {}) => new Promise((resolve) => {
    pending.set(++id, resolve);
    socket.send(JSON.stringify({ id, method, params }));
  });
  await send('HeapProfiler.collectGarbage');
  await send('HeapProfiler.collectGarbage');
  const answer = await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
  socket.close();
  return JSON.parse(answer.result.result.value);
}

/** Stands for the controller: takes each final callback and remembers its status. */
async function startReceiver() {
  const finals = new Map();
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const taskId = /^\/callback\/([0-9a-f-]{36})$/.exec(request.url ?? '')?.[1];
      if (taskId) finals.set(taskId, JSON.parse(Buffer.concat(chunks).toString('utf8')).status);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, finals, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
}

async function inLanes(items, width, work) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

async function waitUntil(check, timeoutMs, what) {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Pod Running times and Job names by task id, from the API server's own change stream. */
function followPods(kube) {
  const runningAt = new Map();
  const jobOf = new Map();
  kube.store.changes.on('change', ({ type, resource, object }) => {
    const taskId = object.metadata.labels?.['task-id'];
    if (!taskId || object.metadata.namespace !== NAMESPACE) return;
    if (resource === 'jobs' && type === 'ADDED') jobOf.set(taskId, object.metadata.name);
    if (resource === 'pods' && object.status?.phase === 'Running' && !runningAt.has(taskId)) runningAt.set(taskId, performance.now());
  });
  return { runningAt, jobOf };
}

/** The most requests that reached the API server within any one second of `ats` (sorted times in ms). */
function peakPerSecond(ats) {
  let peak = 0;
  for (let head = 0, tail = 0; head < ats.length; head += 1) {
    while (ats[head] - ats[tail] >= 1000) tail += 1;
    peak = Math.max(peak, head - tail + 1);
  }
  return peak;
}

/**
 * Per phase of the run: requests the API server's limit counted (the dispatcher's, by its
 * namespace, and the bare loop's), the most in any second, its 429s by request, and the
 * tokens the dispatcher's own bucket gave out meanwhile (its limiter-wait count on /metrics):
 * more counted than given out would be requests that bypass the bucket.
 */
function throttlingReport(kube, phases) {
  for (const phase of phases) {
    const within = kube.limited.filter((r) => r.at >= phase.start && r.at < phase.end);
    const ours = within.filter((r) => r.path.includes(`/namespaces/${NAMESPACE}/`) || !r.path.includes('/namespaces/'));
    const throttled = new Map();
    for (const r of within.filter((x) => x.throttled)) countStatus(throttled, `${r.method} ${r.path.replace(/\/namespaces\/([^/]+)\/([^/]+)\/[^/]+/, '/namespaces/$1/$2/{name}')}`);
    const seconds = (phase.end - phase.start) / 1000;
    console.log(`  ${phase.name} (${seconds.toFixed(0)} s): the server counted ${within.length} requests (${ours.length} of the dispatcher's, ${(ours.length / seconds).toFixed(1)}/s; the dispatcher's bucket gave ${phase.grants} tokens), at most ${peakPerSecond(within.map((r) => r.at))} in one second (${peakPerSecond(ours.map((r) => r.at))} of the dispatcher's); 429s ${tally(throttled) || 'none'}; longest event-loop stall: the dispatcher's ${phase.dispatcherLagMs.toFixed(0)} ms, the API server's (this process) ${phase.benchLagMs.toFixed(0)} ms`);
  }
}

const writeTotal = (counts) => [...counts.values()].reduce((a, b) => a + b, 0);
function writesSince(before, after) {
  const delta = new Map();
  for (const [key, n] of after) if (n - (before.get(key) ?? 0) > 0) delta.set(key, n - (before.get(key) ?? 0));
  return delta;
}
const perTask = (counts, tasks) => [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key} ${(n / tasks).toFixed(2)}`).join(', ');

/**
 * The floor: a bare client-node loop making the same four writes per task (suspended Job,
 * Secret, NetworkPolicy, resume) through the same token bucket, `count` tasks at once.
 */
async function bareLoop(kube, TokenBucket, count, round) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 't', server: kube.url, skipTLSVerify: true }],
    users: [{ name: 't', token: 'bench-token' }],
    contexts: [{ name: 't', cluster: 't', user: 't', namespace: 'baseline' }],
    currentContext: 't',
  });
  const batch = kc.makeApiClient(k8s.BatchV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const networking = kc.makeApiClient(k8s.NetworkingV1Api);
  const bucket = new TokenBucket(qps, burst);
  // As the dispatcher does, a reset connection is tried again (a 429 is not: it fails the run).
  const call = async (request) => {
    for (let attempt = 1; ; attempt += 1) {
      await bucket.take();
      try {
        return await request();
      } catch (error) {
        if (attempt >= 5 || error?.code === 429 || typeof error?.code === 'number') throw error;
        await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
      }
    }
  };
  const namespace = 'baseline';
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, i) => {
    const name = `bare-${round}-${i}`;
    const labels = { 'task-id': `${round}-${i}` };
    const job = await call(() => batch.createNamespacedJob({ namespace, body: { apiVersion: 'batch/v1', kind: 'Job', metadata: { name, labels }, spec: { suspend: true, template: { metadata: { labels }, spec: { restartPolicy: 'Never', containers: [{ name: 'agent', image: 'registry.example/agents/echo:1' }] } } } } }));
    const owner = [{ apiVersion: 'batch/v1', kind: 'Job', name, uid: job.metadata.uid, controller: true }];
    await call(() => core.createNamespacedSecret({ namespace, body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-key`, ownerReferences: owner }, stringData: { AGENT_KEY: 'x' } } }));
    await call(() => networking.createNamespacedNetworkPolicy({ namespace, body: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, ownerReferences: owner }, spec: { podSelector: { matchLabels: labels }, policyTypes: ['Egress'] } } }));
    await call(() => batch.patchNamespacedJob({ name, namespace, body: [{ op: 'replace', path: '/spec/suspend', value: false }] }));
  }));
  return (performance.now() - started) / 1000;
}

async function main() {
  const KubeApiServer = loadKubeApiServer();
  const { TokenBucket } = require(path.join(root, 'dist/src/dispatcher/runtime/kubernetes-rate-limiter.js'));
  const kube = await KubeApiServer.start({
    token: 'bench-token', namespaces: [NAMESPACE, 'baseline'], runPods: true,
    maxRequestsPerSecond: serverQps, maxBurst: serverBurst,
    // Bookmarks keep a resumed watch from a compacted resourceVersion (410 Gone and a re-list).
    bookmarkIntervalMs: 10_000, compactEveryMs: 60_000,
  });
  const pods = followPods(kube);
  const receiver = await startReceiver();
  const db = await database();
  const work = mkdtempSync(path.join(tmpdir(), 'bench-kube-'));
  writeFileSync(path.join(work, 'kubeconfig'), kube.kubeconfig(NAMESPACE));
  const port = await freePort();
  const inspectPort = await freePort();
  const dispatcher = `http://127.0.0.1:${port}`;
  const apiKey = secret();
  const agentKey = secret();
  const statuses = { post: new Map(), checkin: new Map(), checkback: new Map() };
  let server;
  let services;
  try {
    if (!db.url) throw new Error('bench-kube-scale needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    services = await productionServices();
    premises(services.statement, 'PostgreSQL (local, a fresh database)', `the test Kubernetes API server in the bench process over loopback HTTP (no containers; pods run at once and stay Running), its limit ${serverQps} requests/s (burst ${serverBurst}) answering 429 above; one dispatcher replica, KUBE_API_QPS=${qps} KUBE_API_BURST=${burst}, MAX_CONCURRENT_TASKS=${taskCount}, DATABASE_POOL_SIZE=${process.env.BENCH_KUBE_DB_POOL ?? 20}`);
    console.log(`load at start (uptime): ${loadavg().map((load) => load.toFixed(2)).join(', ')}; ${taskCount} tasks in bursts of ${burstSize}`);
    process.env.BENCH_SERVER_NODE_ARGS = `${process.env.BENCH_SERVER_NODE_ARGS ?? ''} --inspect=127.0.0.1:${inspectPort}`;
    server = await bootServer(
      {
        ...services.env, ROLE: 'dispatcher', NODE_ENV: 'development', DATA_DIR: path.join(work, 'data'), DATABASE_URL: db.url,
        DISPATCHER_PORT: String(port), API_KEY: apiKey, AGENT_KEY: agentKey, DISPATCHER_BACKENDS: 'kubernetes',
        KUBECONFIG: path.join(work, 'kubeconfig'), KUBE_NAMESPACE: NAMESPACE, KUBE_API_QPS: String(qps), KUBE_API_BURST: String(burst),
        MAX_CONCURRENT_TASKS: String(taskCount), DATABASE_POOL_SIZE: process.env.BENCH_KUBE_DB_POOL ?? '20',
      },
      `${dispatcher}/health`,
    );
    const pid = server.child.pid;
    // The dispatcher's bucket grants and its event loop's longest stall (prom-client resets it at each scrape), and this process's.
    const dispatcherGauges = async () => {
      const text = await (await fetch(`${dispatcher}/metrics`)).text();
      const value = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
      return { given: value('dispatcher_kube_api_limiter_wait_seconds_count'), lagSeconds: value('nodejs_eventloop_lag_max_seconds') };
    };
    const benchLag = monitorEventLoopDelay({ resolution: 20 });
    benchLag.enable();
    const phases = [];
    const begin = async (name) => {
      const { given } = await dispatcherGauges();
      benchLag.reset();
      return { name, start: performance.now(), given };
    };
    const end = async (open) => {
      const { given, lagSeconds } = await dispatcherGauges();
      phases.push({ name: open.name, start: open.start, end: performance.now(), grants: given - open.given, dispatcherLagMs: lagSeconds * 1000, benchLagMs: benchLag.max / 1e6 });
    };
    const phase = async (name, work) => {
      const open = await begin(name);
      const result = await work();
      await end(open);
      return result;
    };
    const idleCpu = async (what) => {
      const requestsBefore = kube.requests.length;
      const before = cpuMs(pid);
      const t0 = performance.now();
      // The window read in 5 s slices too: a garbage collection that shrinks the heap once
      // activity stops (V8's memory reducer) shows as one slice, steady work in all of them.
      const slices = [];
      for (let at = 0; at < idleSeconds; at += 5) {
        const [sliceCpu, sliceT0] = [cpuMs(pid), performance.now()];
        await new Promise((resolve) => setTimeout(resolve, Math.min(5, idleSeconds - at) * 1000));
        slices.push((cpuMs(pid) - sliceCpu) / (performance.now() - sliceT0));
      }
      const share = (cpuMs(pid) - before) / (performance.now() - t0);
      const calls = kube.requests.slice(requestsBefore).map((r) => `${r.method} ${r.path.replace(/\/namespaces\/[^/]+/, '')}${r.query.get('watch') ? ' (watch)' : ''}`);
      const tallied = new Map();
      for (const call of calls) countStatus(tallied, call);
      console.log(`  dispatcher CPU over ${idleSeconds} s, nothing changing, ${what}: ${(share * 100).toFixed(2)}% of one core (5 s slices: ${slices.map((slice) => `${(slice * 100).toFixed(1)}%`).join(', ')}); API requests meanwhile: ${tally(tallied) || 'none'}`);
      return share;
    };

    // Settle after boot, then the zero-task figures.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const idleEmpty = await idleCpu('no task');
    const memBefore = await memoryAfterGc(inspectPort);
    console.log(`  dispatcher memory after GC, no task: heap ${MiB(memBefore.heapUsed)}, RSS ${MiB(memBefore.rss)}`);

    const bare = [await phase('bare loop before the bursts', () => bareLoop(kube, TokenBucket, burstSize, 0))];
    console.log(`baseline: bare client-node loop, ${burstSize} tasks x 4 writes through the same token bucket: ${bare[0].toFixed(1)} s`);
    const writesBeforeBursts = kube.writes(NAMESPACE);
    const bursts = [];
    const taskIds = [];
    const burstsPhase = await begin('bursts');
    for (let sent = 0; sent < taskCount; sent += burstSize) {
      const ids = Array.from({ length: Math.min(burstSize, taskCount - sent) }, () => randomUUID());
      taskIds.push(...ids);
      const writesBefore = writeTotal(kube.writes(NAMESPACE));
      const t0 = performance.now();
      await inLanes(ids, LANES, async (taskId) => {
        const task = JSON.stringify({
          task_id: taskId, agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: NAMESPACE },
          resources: { cpu: '100m', memory: '64Mi' }, callback_url: `${receiver.url}/callback/${taskId}`, callback_token: secret(), timeout_seconds: 86400,
        });
        // A 503 says "try again shortly" (the database did not answer in time): a client does, after a pause; each is counted.
        for (let attempt = 1; ; attempt += 1) {
          const answer = await fetch(`${dispatcher}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: task });
          const body = await answer.text();
          countStatus(statuses.post, answer.status);
          if (answer.status === 503 && attempt < 5) {
            await new Promise((resolve) => setTimeout(resolve, 1000 * attempt));
            continue;
          }
          if (answer.status !== 201) throw new Error(`POST /tasks answered ${answer.status}: ${body.slice(0, 300)}`);
          break;
        }
      });
      const lastPost = performance.now();
      const posted = (lastPost - t0) / 1000;
      await waitUntil(() => {
        const ended = ids.find((id) => receiver.finals.has(id));
        if (ended) throw new Error(`task ${ended} ended (${receiver.finals.get(ended)}) before its pod ran; see the dispatcher's log`);
        return ids.every((id) => pods.runningAt.has(id));
      }, 900_000, `the pods of burst ${bursts.length + 1}`);
      const seconds = (Math.max(...ids.map((id) => pods.runningAt.get(id))) - t0) / 1000;
      const writes = writeTotal(kube.writes(NAMESPACE)) - writesBefore;
      const floor = Math.max(0, writes - burst) / qps;
      const afterLastPost = (Math.max(...ids.map((id) => pods.runningAt.get(id))) - lastPost) / 1000;
      bursts.push({ seconds, floor, writes, posted, afterLastPost });
      await inLanes(ids, LANES, async (taskId) => {
        const answer = await fetch(`${dispatcher}/agent/checkin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-agent-key': createHmac('sha256', agentKey).update(taskId).digest('hex') },
          body: JSON.stringify({ task_id: taskId }),
        });
        await answer.arrayBuffer();
        countStatus(statuses.checkin, answer.status);
      });
      console.log(`  burst ${bursts.length}: ${ids.length} posted in ${posted.toFixed(1)} s, every pod Running ${seconds.toFixed(1)} s after the first POST, ${afterLastPost.toFixed(1)} s after the last (${writes} writes, ${(writes / seconds).toFixed(0)}/s; floor at ${qps}/s after a burst of ${burst}: ${floor.toFixed(1)} s); ${taskIds.length} running; 429s so far ${kube.throttled}`);
    }
    await end(burstsPhase);
    const createWrites = writesSince(writesBeforeBursts, kube.writes(NAMESPACE));
    bare.push(await phase('bare loop after the bursts', () => bareLoop(kube, TokenBucket, burstSize, 1)));
    console.log(`baseline again after the bursts: ${bare[1].toFixed(1)} s`);

    const [idleFull, memAfter] = await phase('idle and memory readings', async () => {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      return [await idleCpu(`${taskCount} agents running`), await memoryAfterGc(inspectPort)];
    });
    const heapPerTask = (memAfter.heapUsed - memBefore.heapUsed) / taskCount / 1024;
    const rssPerTask = (memAfter.rss - memBefore.rss) / taskCount / 1024;
    console.log(`  dispatcher memory after GC, ${taskCount} running: heap ${MiB(memAfter.heapUsed)}, RSS ${MiB(memAfter.rss)}; growth per running task: heap ${heapPerTask.toFixed(1)} KiB, RSS ${rssPerTask.toFixed(1)} KiB`);

    // Task lives end: each agent checks back completed, then its pod exits 0.
    const finishPhase = await begin(`finishing ${finishCount} tasks`);
    const finishing = taskIds.slice(0, finishCount);
    const writesBeforeFinish = kube.writes(NAMESPACE);
    const finishStarted = performance.now();
    await inLanes(finishing, LANES, async (taskId) => {
      const answer = await fetch(`${dispatcher}/agent/checkback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-agent-key': createHmac('sha256', agentKey).update(taskId).digest('hex') },
        body: JSON.stringify({ task_id: taskId, status: 'completed' }),
      });
      await answer.arrayBuffer();
      countStatus(statuses.checkback, answer.status);
      kube.jobs.finish(NAMESPACE, pods.jobOf.get(taskId), { exitCode: 0 });
    });
    await waitUntil(() => finishing.every((id) => receiver.finals.has(id)), 900_000, 'every callback');
    const finishSeconds = (performance.now() - finishStarted) / 1000;
    // The exit grace after a check-back, when the dispatcher cleans up what is left.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    await end(finishPhase);
    const finishWrites = writesSince(writesBeforeFinish, kube.writes(NAMESPACE));
    const finals = new Map();
    for (const id of finishing) countStatus(finals, receiver.finals.get(id));
    const perLife = writeTotal(createWrites) / taskCount + writeTotal(finishWrites) / finishCount;

    console.log(`API writes per task life (counted by the API server): starting ${perTask(createWrites, taskCount)}; finishing and clean-up (${finishCount} tasks in ${finishSeconds.toFixed(1)} s) ${perTask(finishWrites, finishCount) || 'none'}; total ${perLife.toFixed(2)}`);
    console.log(`statuses: POST /tasks ${tally(statuses.post)}; check-in ${tally(statuses.checkin)}; check-back ${tally(statuses.checkback)}; callbacks ${tally(finals)}; API server 429s ${kube.throttled}; watches answered 410 Gone ${kube.expiredWatches}`);
    console.log(`requests the API server's limit (${serverQps}/s, burst ${serverBurst}) counted, by phase:`);
    throttlingReport(kube, phases);
    const burstRatios = bursts.map((b) => b.seconds / median(bare));
    console.log(`burst start time: ${spread(bursts.map((b) => b.seconds), (v) => `${v.toFixed(1)} s`)}, p95 ${percentile(bursts.map((b) => b.seconds), 95).toFixed(1)} s; over the bare loop ${spread(burstRatios, (v) => `${v.toFixed(2)}x`)}; over the QPS floor ${bursts.every((b) => b.floor > 0) ? spread(bursts.map((b) => b.seconds / b.floor), (v) => `${v.toFixed(2)}x`) : 'none (each burst fits in KUBE_API_BURST)'}`);
    const ok = requireStatuses('POST /tasks', statuses.post, [201, 503]) & requireStatuses('check-in', statuses.checkin, [200, 201]) & requireStatuses('check-back', statuses.checkback, [200, 201]) & requireStatuses('callbacks', finals, ['completed']);

    emitFigure({ figure: `kube scale: memory growth per running task (${taskCount}, heap after GC)`, value: `${heapPerTask.toFixed(1)} KiB (RSS ${rssPerTask.toFixed(1)} KiB)`, baseline: `heap ${MiB(memBefore.heapUsed)} with no task`, ratio: '-', target: '<= 50 KiB', met: Boolean(ok) && heapPerTask <= 50 && rssPerTask <= 50 });
    emitFigure({ figure: 'kube scale: API writes per task life', value: perLife.toFixed(2), baseline: '4 (Job, Secret, NetworkPolicy, resume)', ratio: (perLife / 4).toFixed(2), target: '<= 6', met: perLife <= 6 });
    emitFigure({ figure: `kube scale: ${burstSize}-task burst started (median)`, value: `${median(bursts.map((b) => b.seconds)).toFixed(1)} s, ${kube.throttled} x 429`, baseline: `${median(bare).toFixed(1)} s bare client-node loop`, ratio: `${median(burstRatios).toFixed(2)}x`, target: `at the QPS (<= 1.5x the bare loop), no 429`, met: kube.throttled === 0 && median(burstRatios) <= 1.5 });
    emitFigure({ figure: `kube scale: idle CPU with ${taskCount} running`, value: `${(idleFull * 100).toFixed(2)}%`, baseline: `${(idleEmpty * 100).toFixed(2)}% with no task`, ratio: '-', target: '< 5% of one core', met: idleFull < 0.05 });
  } finally {
    await server?.stop();
    await services?.stop();
    await db.drop();
    await receiver.close();
    await kube.close();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
