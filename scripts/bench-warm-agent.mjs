// The warm pools' bench agent, written with the agent SDK as users write one: `AgentClient.fromEnv()`
// waits for its claim when it was started without TASK_ID (AGENT_POOL and AGENT_ID set) and runs
// cold unchanged otherwise. It reports when its check-in was answered to BENCH_REPORT_URL, read
// from the check-in's env (a warm agent gets the task's env there only) or its own, with, when
// warm, when its claim was answered and what its main thread did from then to the check-in's
// answer: time on a core, and time runnable but waiting for one (Linux's
// /proc/thread-self/schedstat; null elsewhere), and the same over its claim's long poll. Then it checks back completed and exits.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { AgentClient } from '@agent-task/agent-sdk';
import { monotonicMs, processStartMs } from './bench-clock.mjs';

const now = monotonicMs;

/** This thread's time on a core and time waiting for one, in ns, or null. */
function schedstat() {
  try {
    const [onCore, waiting] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
    return { onCore, waiting };
  } catch {
    return null;
  }
}

function report(url, body) {
  const bytes = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': bytes.length } }, (answer) => {
      answer.resume();
      answer.on('end', resolve);
    }).on('error', reject).end(bytes);
  });
}

const agent = AgentClient.fromEnv();
let claimed = null;
let claimWait = null;
if (agent.pool) {
  const asked = schedstat();
  await agent.claim();
  claimed = { t: now(), sched: schedstat() };
  // Runnable time over the long poll: what the answer waited, once it arrived, for a core.
  claimWait = asked && claimed.sched ? { on_core_ms: (claimed.sched.onCore - asked.onCore) / 1e6, waiting_ms: (claimed.sched.waiting - asked.waiting) / 1e6 } : null;
}
const { env } = await agent.checkin();
const checkedIn = now();
const sched = schedstat();
const mainThread = claimed?.sched && sched ? { on_core_ms: (sched.onCore - claimed.sched.onCore) / 1e6, waiting_ms: (sched.waiting - claimed.sched.waiting) / 1e6 } : null;
const reportUrl = env.BENCH_REPORT_URL ?? process.env.BENCH_REPORT_URL;
if (reportUrl) await report(reportUrl, { task_id: agent.taskId, t: checkedIn, claimed: claimed?.t ?? null, main_thread: mainThread, claim_thread: claimWait, origin: processStartMs() });
await agent.checkback({ status: 'completed' });
