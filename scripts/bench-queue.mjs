#!/usr/bin/env node
// The controller queue's claim on real PostgreSQL (issue 21). No server and no HTTP: the
// claim statement and the insert path are run in this process against PostgreSQL, so the log
// level, the S3 server and Redis do not touch these figures, and the claim itself is the
// consumer (each claimed batch is marked `dispatched`, as a dispatcher taking it would).
// With BENCH_QUEUE_TASKS (10,000) pending tasks spread over BENCH_QUEUE_GROUPS (1,000)
// concurrency keys (limit 5 each) and one dispatcher with a bounded capacity,
// BENCH_QUEUE_CLAIMS (40) claims of a batch of 64 are made one after another (keys fill up
// and the claim passes over full ones, as in production). Before each, the claim query (the
// walk of pending tasks in queue order) is timed by EXPLAIN ANALYZE, interleaved with the
// baseline: the plainest walk of the same pending rows (`ORDER BY created_at LIMIT 128`).
// Target: under 5 ms (p50 and p95). A claim that takes fewer than 64 tasks fails the run. The
// whole claim transaction (lock, slot counts, query, UPDATE, commit) is printed too, with the
// EXPLAIN ANALYZE of the candidate walk. Then the insert rate of tasks with the fair-share
// trigger, interleaved with runs without it (BENCH_QUEUE_INSERT_ROUNDS, 3): the create path's
// added cost (the HTTP figure is bench-pipeline.mjs section A). Median and spread of each.
// Needs local PostgreSQL or BENCH_DATABASE_URL, and `npm run build` first.
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { database, emitFigure, interleaved, median, percentile, premises, root, runBenchScript, spread } from './bench-lib.mjs';

const require = createRequire(import.meta.url);
const { DataSource } = require('typeorm');
const dist = (file) => require(path.join(root, 'dist/src', file));
const { roleDataSourceOptions } = dist('shared/database/data-sources.js');
const { runMigrations } = dist('shared/database/migrate.js');
const { SCHEMA_PARTS } = dist('shared/database/schema-parts.js');
const { QueueClaim } = dist('controller/scheduling/queue-claim.js');
const { TasksRepository } = dist('controller/tasks/tasks.repository.js');

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const TASKS = env('BENCH_QUEUE_TASKS', 10_000);
const GROUPS = env('BENCH_QUEUE_GROUPS', 1_000);
const CLAIMS = env('BENCH_QUEUE_CLAIMS', 40);
const INSERTS = env('BENCH_QUEUE_INSERTS', 2_000);
const INSERT_ROUNDS = env('BENCH_QUEUE_INSERT_ROUNDS', 3);
const BATCH = 64;
const TARGET_MS = 5;

async function main() {
  const db = await database();
  if (!db.url) throw new Error('bench-queue needs PostgreSQL (127.0.0.1:5432 or BENCH_DATABASE_URL)');
  const options = roleDataSourceOptions('controller', { url: db.url, poolSize: 16, migrationsRun: false }, SCHEMA_PARTS.controller);
  await runMigrations({ ...options, poolSize: 1 });
  const source = await new DataSource(options).initialize();
  try {
    premises('PostgreSQL (local, a fresh database), the claim run in this process: no server, so no log level, S3 server or Redis in these figures', 'consumer: the claim itself, each batch marked dispatched');
    await seed(source);
    const { candidates, baseline } = await timeClaims(source);
    await explain(source);
    const trigger = (enabled) => source.query(`ALTER TABLE "controller"."tasks" ${enabled ? 'ENABLE' : 'DISABLE'} TRIGGER "tasks_fair_tag"`);
    const inserts = await interleaved(INSERT_ROUNDS, async () => {
      await trigger(false);
      return insertRate(source, 'without the fair-share trigger');
    }, async () => {
      await trigger(true);
      return insertRate(source, 'with the fair-share trigger');
    });
    await trigger(true);
    const shares = inserts.ratios((rate) => rate);
    const pct = (value) => `${(100 * value).toFixed(0)}%`;
    console.log(`\ninserts/s with the trigger: ${spread(inserts.runs)}; without (interleaved): ${spread(inserts.baselines)}; with as a share of the runs beside it: ${spread(shares, pct)}`);
    const ms = (value) => `${value.toFixed(2)} ms`;
    const ok = median(candidates) < TARGET_MS && percentile(candidates, 95) < TARGET_MS;
    console.log(`claim query for a batch of ${BATCH} over ${TASKS} pending in ${GROUPS} groups: ${spread(candidates, ms)}, p95 ${ms(percentile(candidates, 95))}: ${ok ? 'under' : 'OVER'} the ${TARGET_MS} ms target`);
    console.log(`   baseline, the plainest walk of the same pending rows, interleaved: ${spread(baseline, ms)}`);
    emitFigure({
      figure: `queue claim query, batch ${BATCH}, ${TASKS} pending / ${GROUPS} groups (issue 21)`, value: `p50 ${ms(median(candidates))}, p95 ${ms(percentile(candidates, 95))}`,
      baseline: `p50 ${ms(median(baseline))}`, ratio: `${(median(candidates) / median(baseline)).toFixed(1)}x`, target: `p50 and p95 < ${TARGET_MS} ms`, met: ok,
    });
    emitFigure({
      figure: 'task inserts with the fair-share trigger', value: `${median(inserts.runs).toFixed(0)}/s`, baseline: `${median(inserts.baselines).toFixed(0)}/s without`,
      ratio: pct(median(shares)), target: 'none (the added cost, shown)', met: true,
    });
    process.exitCode = ok ? 0 : 1;
  } finally {
    await source.destroy();
    await db.drop();
  }
}

/** Pending tasks round-robin over the groups, each group a concurrency key of limit 5, and one bounded dispatcher. */
async function seed(source) {
  await source.query(
    `INSERT INTO "controller"."dispatchers" (name, slug, endpoint_url, heartbeat_interval_seconds, last_heartbeat_at, backends, capacity)
     VALUES ('bench', 'bench', 'http://127.0.0.1:1', 3600, now(), '["local"]', 1000000)`,
  );
  const started = performance.now();
  await source.query(
    `INSERT INTO "controller"."tasks" (guid, agent_image, runtime_target, resources, timeout_seconds, brief_key,
       concurrency_key, concurrency_limit, concurrency_strategy, fairness_group)
     SELECT gen_random_uuid(), 'bench', '{"type":"local","namespace":""}', '{}', 600, 'briefs/bench.json',
       'group-' || (i % $2), 5, 'queue', 'key:group-' || (i % $2)
     FROM generate_series(1, $1) AS i`,
    [TASKS, GROUPS],
  );
  await source.query('ANALYZE "controller"."tasks"');
  console.log(`seeded ${TASKS} pending tasks over ${GROUPS} groups in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function timeClaims(source) {
  const queue = new QueueClaim(source);
  const times = [];
  const baseline = [];
  const whole = [];
  const executionMs = async (sql) => (await source.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`))[0]['QUERY PLAN'][0]['Execution Time'];
  for (let i = 0; i < CLAIMS; i++) {
    baseline.push(await executionMs(BASELINE));
    times.push(await executionMs(CANDIDATES));
    const started = performance.now();
    const claimed = await queue.claim(BATCH, 60);
    whole.push(performance.now() - started);
    if (claimed.length !== BATCH) throw new Error(`claim ${i} took ${claimed.length} tasks, not ${BATCH}`);
    await source.query(`UPDATE "controller"."tasks" SET status = 'dispatched', dispatch_claimed_until = NULL WHERE guid = ANY($1)`, [claimed.map((task) => task.guid)]);
  }
  console.log(`whole claim transaction (lock, slot counts, candidates, UPDATE, commit): ${spread(whole, (value) => `${value.toFixed(2)} ms`)}, p95 ${percentile(whole, 95).toFixed(2)} ms`);
  // The first two walks warm the caches.
  return { candidates: times.slice(2), baseline: baseline.slice(2) };
}

/** The baseline: the plainest walk of the same pending rows, in creation order. */
const BASELINE = `SELECT guid FROM "controller"."tasks" WHERE status = 'pending' ORDER BY created_at, guid LIMIT ${BATCH * 2}`;

/** The claim query: the walk of pending tasks in queue order, a full page (a later pass's, and the most a claim's opening reads). */
const CANDIDATES = `SELECT guid, runtime_target->>'type' AS runtime_type, dispatcher_labels, requested_dispatcher, concurrency_key, concurrency_limit, priority, fair_tag, created_at::text AS created_at_text
     FROM "controller"."tasks"
     WHERE status = 'pending' AND (next_dispatch_at IS NULL OR next_dispatch_at <= now())
       AND (dispatch_claimed_until IS NULL OR dispatch_claimed_until < now()) AND (concurrency_key IS NULL OR concurrency_key <> ALL('{}'::text[]))
     ORDER BY priority DESC, fair_tag, created_at, guid LIMIT ${BATCH * 2}`;

async function explain(source) {
  const plan = await source.query(`EXPLAIN (ANALYZE, BUFFERS) ${CANDIDATES}`);
  console.log('\nEXPLAIN ANALYZE of the candidate walk:\n' + plan.map((row) => `  ${row['QUERY PLAN']}`).join('\n'));
  const held = await source.query(
    `EXPLAIN ANALYZE SELECT concurrency_key, count(*)::int FROM "controller"."tasks"
     WHERE concurrency_key = ANY($1::text[]) AND (status IN ('dispatched', 'running') OR (status = 'pending' AND dispatch_claimed_until > now()))
     GROUP BY concurrency_key`,
    [Array.from({ length: BATCH * 2 }, (_, i) => `group-${i}`)],
  );
  console.log('\nEXPLAIN ANALYZE of the held slots per key:\n' + held.map((row) => `  ${row['QUERY PLAN']}`).join('\n'));
}

/** Tasks stored per second through the controller's insert statement, 16 at a time. */
async function insertRate(source, label) {
  const tasks = new TasksRepository(source);
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next++ < INSERTS) {
      const guid = randomUUID();
      await tasks.insert({
        guid, status: 'pending', agentImage: 'bench', runtimeTarget: { type: 'local', namespace: '' }, resources: { cpu: '1', memory: '1Gi' },
        timeoutSeconds: 600, briefKey: `briefs/${guid}.json`, briefPending: '{}', fairnessGroup: `creator:operator:bench`, priority: 0,
      });
    }
  }));
  const rate = INSERTS / ((performance.now() - started) / 1000);
  console.log(`${INSERTS} inserts ${label}: ${rate.toFixed(0)}/s`);
  return rate;
}

runBenchScript(main);
