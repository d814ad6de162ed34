#!/usr/bin/env node
// The controller queue's claim on real PostgreSQL (issue 21): with BENCH_QUEUE_TASKS (10,000)
// pending tasks spread over BENCH_QUEUE_GROUPS (1,000) concurrency keys (limit 5 each) and one
// dispatcher with a bounded capacity, BENCH_QUEUE_CLAIMS (40) claims of a batch of 64 are
// made one after another (each claim's tasks then become `dispatched`, so keys fill up and
// the claim passes over full ones, as in production). Before each, the claim query (the walk
// of pending tasks in queue order) is timed by EXPLAIN ANALYZE; target: under 5 ms (p50 and
// p95). The whole claim transaction (lock, slot counts, query, UPDATE, commit) is printed too. It prints the EXPLAIN ANALYZE of the candidate walk, and the insert rate of tasks with
// and without the fair-share trigger on the same database (the create path's added cost; the
// HTTP figure is bench-pipeline.mjs section A, which scripts/bench.mjs runs in the same run).
// Needs local PostgreSQL or BENCH_DATABASE_URL, and `npm run build` first.
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { database, median, percentile, root, runBenchScript } from './bench-lib.mjs';

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
const BATCH = 64;
const TARGET_MS = 5;

async function main() {
  const db = await database();
  if (!db.url) throw new Error('bench-queue needs PostgreSQL (127.0.0.1:5432 or BENCH_DATABASE_URL)');
  const options = roleDataSourceOptions('controller', { url: db.url, poolSize: 16, migrationsRun: false }, SCHEMA_PARTS.controller);
  await runMigrations({ ...options, poolSize: 1 });
  const source = await new DataSource(options).initialize();
  try {
    await seed(source);
    const claimMs = await timeClaims(source);
    await explain(source);
    const withTrigger = await insertRate(source, 'with the fair-share trigger');
    await source.query(`ALTER TABLE "controller"."tasks" DISABLE TRIGGER "tasks_fair_tag"`);
    const without = await insertRate(source, 'without it');
    await source.query(`ALTER TABLE "controller"."tasks" ENABLE TRIGGER "tasks_fair_tag"`);
    console.log(`\ninserts: ${withTrigger.toFixed(0)}/s with the trigger, ${without.toFixed(0)}/s without (${((withTrigger / without) * 100).toFixed(0)}%)`);
    const ok = median(claimMs) < TARGET_MS && percentile(claimMs, 95) < TARGET_MS;
    console.log(`claim query for a batch of ${BATCH} over ${TASKS} pending in ${GROUPS} groups: p50 ${median(claimMs).toFixed(2)} ms, p95 ${percentile(claimMs, 95).toFixed(2)} ms, max ${Math.max(...claimMs).toFixed(2)} ms: ${ok ? 'under' : 'OVER'} the ${TARGET_MS} ms target`);
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
  const whole = [];
  for (let i = 0; i < CLAIMS; i++) {
    const [plan] = await source.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CANDIDATES}`);
    times.push(plan['QUERY PLAN'][0]['Execution Time']);
    const started = performance.now();
    const claimed = await queue.claim(BATCH, 60);
    whole.push(performance.now() - started);
    if (claimed.length !== BATCH) throw new Error(`claim ${i} took ${claimed.length} tasks, not ${BATCH}`);
    await source.query(`UPDATE "controller"."tasks" SET status = 'dispatched', dispatch_claimed_until = NULL WHERE guid = ANY($1)`, [claimed.map((task) => task.guid)]);
  }
  console.log(`whole claim transaction (lock, slot counts, candidates, UPDATE, commit): p50 ${median(whole).toFixed(2)} ms, p95 ${percentile(whole, 95).toFixed(2)} ms`);
  return times.slice(2);
}

/** The claim query: the walk of pending tasks in queue order that a claim's first pass reads. */
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
