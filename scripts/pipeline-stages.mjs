#!/usr/bin/env node
// Where a task's way from POST to its agent's check-in goes, stage by stage: a diagnostic for
// docs/performance.md, not a figure of `npm run bench`. The all-in-one server runs as
// bench-pipeline's section C runs it (production services, the process engine, the shell agent
// that reports its check-in), STAGES_TASKS tasks are POSTed at STAGES_RATE a second, and each
// task's stages are read from the rows both roles stored (`created_at`, `started_at`) and the
// agent's report:
//   POST -> controller insert       the request, its checks and the INSERT's statement time
//   controller -> dispatcher insert commit, the dispatch round's claim, the brief, the hand-off
//   dispatcher insert -> claim      the dispatcher's start round
//   claim -> check-in answered      the spawner, the agent's start, its check-in and answer
// Each as p50, p90, p99 and the max over the tasks, in milliseconds (the database's clock and the agent's,
// one machine). Needs local PostgreSQL and Redis; `npm run build` first.
//
//   STAGES_TASKS=100 STAGES_RATE=10 node scripts/pipeline-stages.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { BENCH_AGENT_IMAGE, bootAllInOne, checkinReports, database, percentile, productionServices } from './bench-lib.mjs';

const count = Number(process.env.STAGES_TASKS ?? 100);
const rate = Number(process.env.STAGES_RATE ?? 10);

function post(agent, url, token, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { authorization: `Token ${token}`, 'content-type': 'application/json' } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const report = await checkinReports();
  const services = await productionServices();
  const db = await database();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pipeline-stages-'));
  const server = await bootAllInOne({ services, databaseUrl: db.url, dataDir });
  const agent = new http.Agent({ keepAlive: true });
  try {
    const sentAt = new Map();
    const started = performance.now();
    await Promise.all(Array.from({ length: count }, async (_, index) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + (index * 1000) / rate - performance.now())));
      const at = Date.now();
      const body = JSON.stringify({
        agent_image: BENCH_AGENT_IMAGE, runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '128Mi' },
        timeout_seconds: 300, brief: { n: index }, env: { BENCH_REPORT_URL: report.url },
      });
      const answer = await post(agent, `${server.controller}/api/v1/tasks/`, server.token, body);
      if (answer.status !== 201) throw new Error(`POST /api/v1/tasks/ answered ${answer.status}: ${answer.text.slice(0, 200)}`);
      sentAt.set(JSON.parse(answer.text).guid, at);
    }));
    const deadline = Date.now() + 60_000;
    while (report.checkins.size < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));

    const client = new pg.Client(db.url);
    await client.connect();
    const epoch = (column) => `extract(epoch from ${column}) * 1000`;
    const { rows } = await client.query(
      `SELECT c.guid::text AS guid, ${epoch('c.created_at')} AS controller, ${epoch('d.created_at')} AS dispatcher, ${epoch('d.started_at')} AS claimed
       FROM "controller"."tasks" c JOIN "dispatcher"."tasks" d ON d.task_id = c.guid`,
    );
    await client.end();
    const stages = new Map([['POST -> controller insert', []], ['controller -> dispatcher insert', []], ['dispatcher insert -> claim', []], ['claim -> check-in answered', []], ['POST -> check-in answered', []]]);
    for (const row of rows) {
      const posted = sentAt.get(row.guid);
      const checkin = report.checkins.get(row.guid);
      if (posted === undefined || checkin === undefined) continue;
      const [controller, dispatcher, claimed] = [Number(row.controller), Number(row.dispatcher), Number(row.claimed)];
      stages.get('POST -> controller insert').push(controller - posted);
      stages.get('controller -> dispatcher insert').push(dispatcher - controller);
      stages.get('dispatcher insert -> claim').push(claimed - dispatcher);
      stages.get('claim -> check-in answered').push(checkin - claimed);
      stages.get('POST -> check-in answered').push(checkin - posted);
    }
    console.log(`${count} tasks POSTed at ${rate}/s to the all-in-one server (${server.consumer}); ${report.checkins.size} agents reported their check-in`);
    for (const [stage, values] of stages) {
      const at = (share) => percentile(values, share)?.toFixed(1);
      console.log(`${stage.padEnd(34)} p50 ${at(50)} ms, p90 ${at(90)} ms, p99 ${at(99)} ms, max ${at(100)} ms (n ${values.length})`);
    }
    if (report.checkins.size < count) process.exitCode = 1;
  } finally {
    agent.destroy();
    await server.stop();
    await services.stop();
    await db.drop();
    await report.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
