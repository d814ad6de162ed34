// bench-checkin-agent.mjs for warm pools: the same smallest agent, which first waits for its
// claim when it was started without TASK_ID (AGENT_POOL and AGENT_ID set). It reports when its
// check-in was answered to BENCH_REPORT_URL, read from the check-in's env (a warm agent gets the
// task's env there only) or its own. Plain fetch, no imports.
const { DISPATCHER_URL, AGENT_POOL, AGENT_ID } = process.env;
let { TASK_ID, AGENT_KEY } = process.env;
const now = () => performance.timeOrigin + performance.now();

async function post(path, body, expect = [200]) {
  const answer = await fetch(path.startsWith('http') ? path : `${DISPATCHER_URL}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-agent-key': AGENT_KEY }, body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (!expect.includes(answer.status)) throw new Error(`${path} answered ${answer.status}: ${text}`);
  return { status: answer.status, body: text ? JSON.parse(text) : null };
}

while (!TASK_ID) {
  const claim = await post('/agent/claim?wait_seconds=25', { pool: AGENT_POOL, agent_id: AGENT_ID }, [200, 204]);
  if (claim.status === 200) ({ task_id: TASK_ID, agent_key: AGENT_KEY } = claim.body.data);
}
const checkin = await post('/agent/checkin', { task_id: TASK_ID });
const checkedIn = now();
const reportUrl = checkin.body.data.env.BENCH_REPORT_URL ?? process.env.BENCH_REPORT_URL;
if (reportUrl) await post(reportUrl, { task_id: TASK_ID, t: checkedIn, origin: performance.timeOrigin });
await post('/agent/checkback', { task_id: TASK_ID, status: 'completed' });
