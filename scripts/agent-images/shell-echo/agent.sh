#!/bin/sh
# A busybox shell agent that speaks the dispatcher's agent protocol: checks in, reports
# progress, writes results/<task_id>/result.json and checks back completed. With
# SLEEP_SECONDS set it first sleeps that long after checking in (for stop and time-out
# tests); SIGTERM ends it with 143 (a shell as PID 1 would otherwise ignore it).
# busybox wget can only GET and POST (and its -T segfaults), so the PUT goes through nc.
set -eu
: "${TASK_ID:?TASK_ID is not set}" "${DISPATCHER_URL:?DISPATCHER_URL is not set}" "${AGENT_KEY:?AGENT_KEY is not set}"

post() {
  wget -q -O - --header "X-Agent-Key: $AGENT_KEY" --header 'Content-Type: application/json' \
    --post-data "$2" "$DISPATCHER_URL$1"
  echo
}

# busybox nc quits as soon as its input ends, before a slow answer arrives, so the
# input stays open until the status line is in (at most 30 s).
put() {
  hostport=${DISPATCHER_URL#*://}
  hostport=${hostport%%/*}
  host=${hostport%:*}
  port=${hostport##*:}
  [ "$port" = "$hostport" ] && port=80
  length=$(printf '%s' "$2" | wc -c)
  answer=/tmp/put-answer
  rm -f "$answer"
  {
    printf 'PUT %s HTTP/1.1\r\nHost: %s\r\nX-Agent-Key: %s\r\nX-Task-Id: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
      "$1" "$hostport" "$AGENT_KEY" "$TASK_ID" "$length" "$2"
    waited=0
    until grep -q '^HTTP/1\.. [0-9][0-9][0-9]' "$answer" 2>/dev/null || [ "$waited" -ge 300 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
  } | nc "$host" "$port" > "$answer"
  status=$(head -n 1 "$answer" | tr -d '\r')
  echo "PUT $1: $status"
  case "$status" in
    "HTTP/1."?" 2"*) ;;
    *) echo "PUT $1 was refused" >&2; exit 4 ;;
  esac
}

# Before the check-in: once the task shows as running it may be cancelled at any moment.
trap 'echo "SIGTERM received"; exit 143' TERM
echo "shell-echo agent for task $TASK_ID checking in at $DISPATCHER_URL"
post /agent/checkin "{\"task_id\":\"$TASK_ID\"}"
if [ -n "${SLEEP_SECONDS:-}" ]; then
  echo "sleeping $SLEEP_SECONDS s"
  sleep "$SLEEP_SECONDS" &
  wait $!
fi
post /agent/progress "{\"task_id\":\"$TASK_ID\",\"percentage\":50,\"message\":\"shell agent working\"}"

key="results/$TASK_ID/result.json"
put "/agent/objects/$key" "{\"task_id\":\"$TASK_ID\",\"agent\":\"shell-echo\",\"message\":\"${ECHO_MESSAGE:-hello}\"}"

post /agent/checkback "{\"task_id\":\"$TASK_ID\",\"status\":\"completed\",\"result_key\":\"$key\",\"result_metadata\":{\"agent\":\"shell-echo\"}}"
echo "shell-echo agent done"
