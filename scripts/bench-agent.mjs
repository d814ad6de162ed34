#!/usr/bin/env node
// The smallest agent, for scripts/bench-pipeline.mjs: checks in, reports the moment its
// check-in was answered to BENCH_REPORT_URL, checks back `completed` and exits. Plain
// fetch, nothing from the project, so it measures the pipeline and not an agent's work.
const { TASK_ID, DISPATCHER_URL, AGENT_KEY, BENCH_REPORT_URL } = process.env;

async function post(url, body, headers) {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${url} answered ${answer.status}: ${text.slice(0, 300)}`);
  return text;
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
