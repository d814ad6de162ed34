#!/usr/bin/env node
// The smallest agent, for scripts/bench-pipeline.mjs: checks in, reports the moment its
// check-in was answered to BENCH_REPORT_URL, checks back `completed` and exits. node:http
// (fetch's implementation is loaded and compiled at its first call: tens of milliseconds of
// CPU), nothing from the project, so it measures the pipeline and not an agent's work.
import { request } from 'node:http';

const { TASK_ID, DISPATCHER_URL, AGENT_KEY, BENCH_REPORT_URL } = process.env;

function post(url, body, headers) {
  const bytes = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'POST', timeout: 60_000, headers: { 'content-type': 'application/json', 'content-length': bytes.length, ...headers } }, (answer) => {
      const chunks = [];
      answer.on('data', (chunk) => chunks.push(chunk));
      answer.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (answer.statusCode >= 200 && answer.statusCode < 300) resolve(text);
        else reject(new Error(`${url} answered ${answer.statusCode}: ${text.slice(0, 300)}`));
      });
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${url} did not answer within 60 s`)));
    outgoing.on('error', reject).end(bytes);
  });
}

const agent = { 'x-agent-key': AGENT_KEY };
try {
  if (!TASK_ID || !DISPATCHER_URL || !AGENT_KEY) throw new Error('TASK_ID, DISPATCHER_URL and AGENT_KEY must be set');
  await post(`${DISPATCHER_URL}/agent/checkin`, { task_id: TASK_ID }, agent);
  const t = Date.now();
  if (BENCH_REPORT_URL) {
    await post(BENCH_REPORT_URL, { task_id: TASK_ID, t }, {}).catch((error) => console.error(`bench-agent: report: ${error.message}`));
  }
  await post(`${DISPATCHER_URL}/agent/checkback`, { task_id: TASK_ID, status: 'completed' }, agent);
  process.exit(0);
} catch (error) {
  console.error(`bench-agent: ${error.message}`);
  await post(`${DISPATCHER_URL}/agent/checkback`, { task_id: TASK_ID, status: 'failed', error: String(error.message) }, agent).catch(() => undefined);
  process.exit(1);
}
