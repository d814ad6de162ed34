// The smallest agent the dispatcher can run: check in, report when the process began and
// when the check-in was answered (BENCH_REPORT_URL, when set), check back completed, exit.
// node:http, which Node has loaded at start, rather than fetch, whose implementation Node loads
// and compiles at its first call (tens of milliseconds of CPU): the process start is as small as
// Node allows. bench-dispatcher-start.mjs maps an image to it and also spawns it bare as the baseline.
import { request } from 'node:http';
import { monotonicMs as now, processStartMs } from './bench-clock.mjs';

const { TASK_ID, DISPATCHER_URL, AGENT_KEY, BENCH_REPORT_URL } = process.env;

function post(url, body) {
  const bytes = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': bytes.length, 'x-agent-key': AGENT_KEY };
    request(url, { method: 'POST', headers }, (answer) => {
      answer.resume();
      answer.on('end', () => (answer.statusCode >= 200 && answer.statusCode < 300 ? resolve() : reject(new Error(`${url} answered ${answer.statusCode}`))));
    }).on('error', reject).end(bytes);
  });
}

await post(`${DISPATCHER_URL}/agent/checkin`, { task_id: TASK_ID });
const checkedIn = now();
// When this process began: the report splits the wait into before and after it.
if (BENCH_REPORT_URL) await post(BENCH_REPORT_URL, { task_id: TASK_ID, t: checkedIn, origin: processStartMs() });
await post(`${DISPATCHER_URL}/agent/checkback`, { task_id: TASK_ID, status: 'completed' });
