#!/bin/sh
# The agent of scripts/bench-streams.mjs: checks in and reports progress (so its task is
# `running` at the controller), then prints a line every 100 ms until it is stopped, for the
# log followers to read.
set -eu
post() { curl -fsS -m 60 -o /dev/null -H 'content-type: application/json' -H "x-agent-key: $AGENT_KEY" "$@"; }
post -d "{\"task_id\":\"$TASK_ID\"}" "$DISPATCHER_URL/agent/checkin"
post -d "{\"task_id\":\"$TASK_ID\",\"percentage\":1,\"message\":\"ticking\"}" "$DISPATCHER_URL/agent/progress"
while :; do
  date +%s%3N
  sleep 0.1
done
