// The smallest agent the dispatcher can run: check in, report when the process began and
// when the check-in was answered (BENCH_REPORT_URL, when set), check back completed, exit.
// Plain fetch and no imports, so the process start is as small as Node allows;
// bench-dispatcher-start.mjs maps an image to it and also spawns it bare as the baseline.
const { TASK_ID, DISPATCHER_URL, AGENT_KEY, BENCH_REPORT_URL } = process.env;
const headers = { 'content-type': 'application/json', 'x-agent-key': AGENT_KEY };
const now = () => performance.timeOrigin + performance.now();

async function post(url, body) {
  const answer = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  await answer.arrayBuffer();
  if (!answer.ok) throw new Error(`${url} answered ${answer.status}`);
}

await post(`${DISPATCHER_URL}/agent/checkin`, { task_id: TASK_ID });
const checkedIn = now();
// timeOrigin is when this process began: the report splits the wait into before and after it.
if (BENCH_REPORT_URL) await post(BENCH_REPORT_URL, { task_id: TASK_ID, t: checkedIn, origin: performance.timeOrigin });
await post(`${DISPATCHER_URL}/agent/checkback`, { task_id: TASK_ID, status: 'completed' });
