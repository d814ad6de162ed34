#!/bin/sh
# The smallest agent, for scripts/bench-pipeline.mjs: checks in, reports the moment its
# check-in was answered to BENCH_REPORT_URL, checks back `completed` and exits. A shell and
# curl start in a few milliseconds, so the figures are the pipeline's, not an agent runtime's.
set -eu
post() { curl -fsS -m 60 -o /dev/null -H 'content-type: application/json' "$@"; }
post -H "x-agent-key: $AGENT_KEY" -d "{\"task_id\":\"$TASK_ID\"}" "$DISPATCHER_URL/agent/checkin"
if [ -n "${BENCH_REPORT_URL:-}" ]; then
  post -d "{\"task_id\":\"$TASK_ID\",\"t\":$(date +%s%3N)}" "$BENCH_REPORT_URL" || echo "bench-agent: report failed" >&2
fi
post -H "x-agent-key: $AGENT_KEY" -d "{\"task_id\":\"$TASK_ID\",\"status\":\"completed\"}" "$DISPATCHER_URL/agent/checkback"
