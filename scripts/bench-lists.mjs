#!/usr/bin/env node
// List latency at scale, beside a same-run bare baseline. For each layout of BENCH_LISTS_LAYOUT
// (`both`, the default, or `clustered` or `interleaved`) it seeds BENCH_LISTS_TASKS (1,000,000)
// tasks and BENCH_LISTS_DELIVERIES (1,000,000) ledger rows by SQL into a fresh database that
// the controller's migrations built:
//  - interleaved: twenty workflows, twelve statuses, four sources, three events and the
//    outcomes taking turns row by row, so every filter's matches are spread through the table;
//  - clustered: each value's rows one after another (and in time), so a filter's matches sit
//    in one stretch of the table, far from the newest rows for most values.
// Then it times, one request at a time (BENCH_LISTS_ROUNDS, 15, after 3 warm-up requests, each
// request right after one to the baseline server, so the baseline is interleaved with every
// figure), prints median and spread (min, max), and the plan (node names and index, from EXPLAIN ANALYZE of the statements
// src/shared/database/keyset-page.ts runs: the page and the capped count) of each list query:
//  A. baseline: a bare node:http server that checks a token and answers one
//     `SELECT ... ORDER BY created_at DESC LIMIT 50` of the same table as JSON;
//  B. GET /api/v1/tasks/: the first page, ?status=failed, ?workflow=, /workflows/{id}/runs/,
//     each page reached by following `next` twenty times (every hop timed), and
//     ?offset=500000 for comparison;
//  C. GET /api/v1/webhooks/deliveries/: the first page, ?source=, ?event=, ?outcome=failed,
//     ?outcome=ignored and ?workflow=.
// Target (issue 23): every list query under 20 ms median, both layouts; any answer but 200
// fails the run. The controller runs as in production: LOG_LEVEL=info with its access log,
// objects in s3rver, Redis. No dispatcher: the figures are reads of seeded rows, and a
// dispatcher would only reconcile the seeded `running` tasks it never ran. Needs local
// PostgreSQL (127.0.0.1:5432, user postgres) and Redis. Run `npm run build` first.
import { fork } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { bootServer, database, emitFigure, freePort, median, percentile, premises, productionServices, secret, spread, runBenchScript } from './bench-lib.mjs';

const TASKS = Number(process.env.BENCH_LISTS_TASKS ?? 1_000_000);
const DELIVERIES = Number(process.env.BENCH_LISTS_DELIVERIES ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_LISTS_ROUNDS ?? 15);
const WORKFLOWS = 20;
const LAYOUTS = (process.env.BENCH_LISTS_LAYOUT ?? 'both') === 'both' ? ['interleaved', 'clustered'] : [process.env.BENCH_LISTS_LAYOUT];
const TOKEN = secret();

/**
 * The value of row `i` (1..n) from `values`: in turn row by row (interleaved), or in runs of
 * n / values.length rows (clustered). `values` is a SQL array expression of `count` entries.
 */
function pick(layout, values, count, n) {
  return layout === 'interleaved' ? `(${values})[1 + i % ${count}]` : `(${values})[1 + ((i - 1)::bigint * ${count} / ${n})::int]`;
}

/** Statuses in the shares a busy installation has: mostly completed, a few percent failed. */
const STATUSES = `ARRAY['completed','completed','completed','completed','completed','completed','completed','completed','failed','timed_out','cancelled','running']`;
const WORKFLOW_IDS = `ARRAY[${Array.from({ length: WORKFLOWS }, (_, k) => `'workflow-${k}'`).join(',')}]`;
const OUTCOMES = `ARRAY['routed','ignored','ignored','ignored','ignored','ignored','ignored','ignored','ignored','ignored','ignored','failed']`;
const SOURCES = `ARRAY['forge','chat','ci','billing']`;
const EVENTS = `ARRAY['push','pull_request','issues']`;

const seedTasks = (layout) => `
  INSERT INTO "controller"."tasks" (guid, status, agent_image, runtime_target, resources, timeout_seconds, brief_key,
                                    workflow_id, created_at, finished_at, exit_code)
  SELECT gen_random_uuid(), ${pick(layout, STATUSES, 12, TASKS)},
         'agent-examples/echo', '{"type":"local","namespace":""}', '{"cpu":"500m","memory":"512Mi"}', 600, 'briefs/seeded.json',
         ${pick(layout, WORKFLOW_IDS, WORKFLOWS, TASKS)},
         now() - make_interval(secs => i * 2.5), now() - make_interval(secs => i * 2.5 - 30), 0
    FROM generate_series($1::int, $2::int) AS i`;

const seedDeliveries = (layout) => `
  INSERT INTO "controller"."webhook_deliveries" (source, event, delivery_id, dedup_key, verified, workflow_id, outcome, status_code,
                                                 payload_size, received_at, finished_at)
  SELECT ${pick(layout, SOURCES, 4, DELIVERIES)}, ${pick(layout, EVENTS, 3, DELIVERIES)}, 'd-' || i, 'forge:d-' || i, true,
         CASE WHEN i % 3 = 0 THEN 'workflow-' || (i % ${WORKFLOWS}) END,
         ${pick(layout, OUTCOMES, 12, DELIVERIES)},
         202, 300, now() - make_interval(secs => i * 2.5), now() - make_interval(secs => i * 2.5)
    FROM generate_series($1::int, $2::int) AS i`;

async function seed(url, layout) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = performance.now();
    const batch = 250_000;
    for (let from = 1; from <= TASKS; from += batch) await client.query(seedTasks(layout), [from, Math.min(TASKS, from + batch - 1)]);
    for (let from = 1; from <= DELIVERIES; from += batch) await client.query(seedDeliveries(layout), [from, Math.min(DELIVERIES, from + batch - 1)]);
    await client.query(`INSERT INTO "controller"."workflows" (id, name, task_template) VALUES ('workflow-7', 'seeded', '{}')`);
    await client.query('VACUUM ANALYZE "controller"."tasks"');
    await client.query('VACUUM ANALYZE "controller"."webhook_deliveries"');
    console.log(`seeded ${TASKS} tasks and ${DELIVERIES} deliveries (${layout}) by SQL in ${((performance.now() - started) / 1000).toFixed(0)} s (then VACUUM ANALYZE)`);
  } finally {
    await client.end();
  }
}

/** The table and list key of each list, as keyset-page.ts walks them. */
const LISTS = {
  tasks: { table: '"controller"."tasks"', time: 'created_at', id: 'guid' },
  deliveries: { table: '"controller"."webhook_deliveries"', time: 'received_at', id: 'id' },
};

/** Node names (and index) of a plan, outermost first: `Limit > Index Scan Backward (tasks_created_idx)`. */
function planNodes(plan) {
  const nodes = [];
  const visit = (node) => {
    const scan = node['Index Name'] ? ` (${node['Index Name']})` : node['Relation Name'] ? ` (${node['Relation Name']})` : '';
    nodes.push(`${node['Node Type']}${node['Scan Direction'] === 'Backward' ? ' Backward' : ''}${scan}`);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(plan);
  return nodes.join(' > ');
}

/** The plans of a list's two statements: the page (limit + 1 rows in key order) and the capped count. */
async function explainList(client, list, lead) {
  const { table, time, id } = LISTS[list];
  // A single equality filter leads the list's order, as two bounds (keyset-page.ts, leadRange).
  const [column, value] = lead ?? [];
  const filter = lead ? `WHERE ${column} >= '${value}' AND ${column} <= '${value}'` : '';
  const order = `${lead ? `${column} DESC, ` : ''}${time} DESC, ${id} DESC`;
  const page = `SELECT * FROM ${table} ${filter} ORDER BY ${order} LIMIT 51`;
  const count = `SELECT count(*)::int FROM (SELECT 1 FROM ${table} ${filter} ORDER BY ${order} LIMIT 10001) matched`;
  const explain = async (sql) => planNodes((await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`)).rows[0]['QUERY PLAN'][0].Plan);
  return { page: await explain(page), count: await explain(count) };
}

function get(url) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http.get(url, { headers: { authorization: `Token ${TOKEN}` }, agent: keepAlive }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const ms = performance.now() - started;
        if (res.statusCode !== 200) return reject(new Error(`${url}: ${res.statusCode} ${Buffer.concat(chunks)}`));
        const json = String(res.headers['content-type'] ?? '').includes('json');
        resolve({ ms, body: json ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null });
      });
    }).on('error', reject);
  });
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** ROUNDS requests of one URL after warm-up, each right after one to the baseline: medians, p90, spread. */
async function time(url, baselineUrl) {
  for (let i = 0; i < 3; i++) await get(url);
  const samples = [];
  const bare = [];
  let body;
  for (let i = 0; i < ROUNDS; i++) {
    bare.push((await get(baselineUrl)).ms);
    ({ ms: samples[i], body } = await get(url));
  }
  return { median: median(samples), p90: percentile(samples, 90), samples, bare, body };
}

/** Follows `next` twenty times from `url`, ROUNDS / 5 walks; every hop is one sample, each after a baseline request. */
async function walk(url, controllerBase, publicBase, baselineUrl) {
  const samples = [];
  const bare = [];
  let depth = 0;
  for (let round = 0; round < Math.max(1, Math.round(ROUNDS / 5)); round++) {
    let next = (await get(url)).body.next;
    for (let hop = 0; hop < 20 && next; hop++) {
      bare.push((await get(baselineUrl)).ms);
      const { ms, body } = await get(next.replace(publicBase, controllerBase));
      samples.push(ms);
      next = body.next;
      depth = hop + 1;
    }
  }
  return { median: median(samples), p90: percentile(samples, 90), samples, bare, hops: samples.length, depth };
}

/** The baseline server (child process side): a token check and one page query. */
async function baselineServer() {
  const pool = new pg.Pool({ connectionString: process.env.BASELINE_DATABASE_URL, max: 10 });
  // The database is dropped at the end with its connections: an idle client's error then is expected.
  pool.on('error', () => undefined);
  const expected = Buffer.from(`Token ${process.env.BASELINE_TOKEN}`);
  const server = http.createServer(async (req, res) => {
    const given = Buffer.from(String(req.headers.authorization ?? ''));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return void res.writeHead(401).end();
    try {
      const { rows } = await pool.query(`SELECT * FROM "controller"."tasks" ORDER BY created_at DESC LIMIT 50`);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: rows }));
    } catch {
      res.writeHead(503).end();
    }
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('disconnect', () => server.close(() => void pool.end().finally(() => process.exit(0))));
}

/** Starts the baseline server in a child process for one layout's database. */
async function startBaseline(url) {
  const child = fork(fileURLToPath(import.meta.url), ['--baseline-server'], {
    env: { ...process.env, BASELINE_DATABASE_URL: url, BASELINE_TOKEN: TOKEN },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.disconnect() };
}

const ms = (value) => `${value.toFixed(1)} ms`;
/** s3rver and Redis, started in main (not in the forked baseline server). */
let services;

async function main() {
  services = await productionServices();
  premises(services.statement, 'PostgreSQL (local, a fresh database per layout)', 'consumer: none, the figures are reads of seeded rows (a dispatcher would only reconcile seeded running tasks it never ran)');
  const slow = [];
  for (const layout of LAYOUTS) slow.push(...(await benchLayout(layout)));
  console.log(slow.length === 0
    ? `every list query under 20 ms median (${LAYOUTS.join(' and ')})`
    : `over 20 ms median: ${slow.join('; ')}`);
  if (slow.length) process.exitCode = 1;
}

/** One layout in a database of its own: seeds it, times every list query and prints its plans. Answers the queries over 20 ms. */
async function benchLayout(layout) {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-lists-'));
  const db = await database();
  const slow = [];
  const medians = [];
  let server;
  let bareServer;
  const client = new pg.Client({ connectionString: db.url });
  try {
    if (!db.url) throw new Error('bench-lists needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const publicBase = 'http://bench.invalid';
    const boot = () => bootServer({
      ...services.env, ROLE: 'controller', NODE_ENV: 'development', DATA_DIR: path.join(work, 'controller'), DATABASE_URL: db.url,
      CONTROLLER_PORT: String(port), API_TOKEN: TOKEN, PUBLIC_URL: publicBase,
    }, `${base}/health/`);
    server = await boot();
    await server.stop();
    console.log(`--- ${layout} ---`);
    await seed(db.url, layout);
    server = await boot();
    await client.connect();

    bareServer = await startBaseline(db.url);
    const bareAll = [];
    const versus = (figures) => {
      bareAll.push(...figures.bare);
      medians.push({ layout, median: figures.median, bare: median(figures.bare) });
      return `${spread(figures.samples, ms)}, p90 ${ms(figures.p90)}; baseline interleaved ${ms(median(figures.bare))}, ${(figures.median / median(figures.bare)).toFixed(1)}x`;
    };
    console.log('A. baseline (bare node:http, token check, one SELECT ... ORDER BY created_at DESC LIMIT 50): one request before each request timed below');
    const measure = async (name, route, list, lead) => {
      const figures = await time(`${base}${route}`, bareServer.url);
      const plans = await explainList(client, list, lead);
      console.log(`   ${name}: ${versus(figures)}; count ${figures.body.count}${figures.body.count_estimated ? ' (estimate)' : ''}`);
      console.log(`      page:  ${plans.page}`);
      console.log(`      count: ${plans.count}`);
      if (figures.median >= 20) slow.push(`${layout} ${name} ${ms(figures.median)}`);
    };
    console.log(`B. GET /api/v1/tasks/ with ${TASKS} stored tasks, 50 a page (target: each under 20 ms median)`);
    await measure('first page', '/api/v1/tasks/', 'tasks');
    await measure('?status=failed', '/api/v1/tasks/?status=failed', 'tasks', ['status', 'failed']);
    await measure('?workflow=workflow-7', '/api/v1/tasks/?workflow=workflow-7', 'tasks', ['workflow_id', 'workflow-7']);
    await measure('/workflows/workflow-7/runs/', '/api/v1/workflows/workflow-7/runs/', 'tasks', ['workflow_id', 'workflow-7']);
    const walked = await walk(`${base}/api/v1/tasks/`, base, publicBase, bareServer.url);
    console.log(`   following next ${walked.depth} times (${walked.hops} hops timed): ${versus(walked)}`);
    const walkedFiltered = await walk(`${base}/api/v1/tasks/?status=failed`, base, publicBase, bareServer.url);
    console.log(`   ?status=failed, following next ${walkedFiltered.depth} times: ${versus(walkedFiltered)}`);
    const walkedWorkflow = await walk(`${base}/api/v1/tasks/?workflow=workflow-7`, base, publicBase, bareServer.url);
    console.log(`   ?workflow=workflow-7, following next ${walkedWorkflow.depth} times: ${versus(walkedWorkflow)}`);
    for (const [name, figures] of [['next', walked], ['?status=failed next', walkedFiltered], ['?workflow=workflow-7 next', walkedWorkflow]]) {
      if (figures.median >= 20) slow.push(`${layout} ${name} ${ms(figures.median)}`);
    }
    const deep = await time(`${base}/api/v1/tasks/?offset=${Math.floor(TASKS / 2)}`, bareServer.url);
    console.log(`   ?offset=${Math.floor(TASKS / 2)} (for comparison, not held to the target; cursors are the fast way): ${spread(deep.samples, ms)}`);
    console.log(`C. GET /api/v1/webhooks/deliveries/ with ${DELIVERIES} ledger rows`);
    await measure('first page', '/api/v1/webhooks/deliveries/', 'deliveries');
    await measure('?source=billing', '/api/v1/webhooks/deliveries/?source=billing', 'deliveries', ['source', 'billing']);
    await measure('?event=issues', '/api/v1/webhooks/deliveries/?event=issues', 'deliveries', ['event', 'issues']);
    await measure('?outcome=failed', '/api/v1/webhooks/deliveries/?outcome=failed', 'deliveries', ['outcome', 'failed']);
    await measure('?outcome=ignored', '/api/v1/webhooks/deliveries/?outcome=ignored', 'deliveries', ['outcome', 'ignored']);
    await measure('?workflow=workflow-7', '/api/v1/webhooks/deliveries/?workflow=workflow-7', 'deliveries', ['workflow_id', 'workflow-7']);
    // README's Metrics section states this figure: the db gauges' GROUP BY status at scrape time.
    const scrape = await time(`${base}/metrics`, bareServer.url);
    console.log(`D. GET /metrics with ${TASKS} stored tasks (its db gauges are read at scrape time, not a list, not held to the target): ${spread(scrape.samples, ms)}`);
    console.log(`A. baseline over all ${bareAll.length} interleaved requests: ${spread(bareAll, ms)}`);
    const slowest = medians.reduce((worst, entry) => (entry.median > worst.median ? entry : worst));
    emitFigure({
      figure: `lists at ${TASKS} tasks / ${DELIVERIES} deliveries (${layout}), slowest of ${medians.length} list queries (issue 23)`, value: `median ${ms(slowest.median)}`,
      baseline: `median ${ms(slowest.bare)}`, ratio: `${(slowest.median / slowest.bare).toFixed(1)}x`, target: 'every list query < 20 ms median', met: slow.length === 0,
    });
  } finally {
    bareServer?.stop();
    await client.end().catch(() => undefined);
    await server?.stop();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
  return slow;
}

runBenchScript(async () => {
  try {
    await main();
  } finally {
    keepAlive.destroy();
    await services?.stop();
  }
}, baselineServer);
