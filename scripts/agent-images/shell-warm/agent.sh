#!/bin/sh
# The shell-echo agent as a warm pool runs it: started with AGENT_POOL, AGENT_ID and the pool
# key and no TASK_ID, it first asks POST /agent/claim until a task is assigned (a 204 answers
# nothing: ask again), then uses the task's id and per-task key, as a cold agent does.
set -eu
: "${DISPATCHER_URL:?DISPATCHER_URL is not set}" "${AGENT_KEY:?AGENT_KEY is not set}"

post() {
  wget -q -O - --header "X-Agent-Key: $AGENT_KEY" --header 'Content-Type: application/json' \
    --post-data "$2" "$DISPATCHER_URL$1" || return 1
  echo
}

# The string field $2 of the JSON answer $1, into $field_value, by pattern removal alone: no
# process starts between the claim's answer and the check-in (a sed in a subshell per field
# was two forks each, milliseconds on a busy host, on the path a person waits on).
field() {
  rest=${1#*"\"$2\":\""}
  if [ "$rest" = "$1" ]; then field_value=''; else field_value=${rest%%'"'*}; fi
}

trap 'echo "SIGTERM received"; exit 143' TERM
if [ -z "${TASK_ID:-}" ]; then
  : "${AGENT_POOL:?AGENT_POOL is not set}" "${AGENT_ID:?AGENT_ID is not set}"
  echo "shell-warm agent $AGENT_ID of pool $AGENT_POOL waiting for a task"
  TASK_ID=""
  unreachable=0
  while [ -z "$TASK_ID" ]; do
    if answer=$(post "/agent/claim?wait_seconds=25" "{\"pool\":\"$AGENT_POOL\",\"agent_id\":\"$AGENT_ID\"}"); then
      unreachable=0
      field "$answer" task_id
      TASK_ID=$field_value
    else
      # No answer (the dispatcher restarting, or gone): wait a second before asking again, and
      # give up after five minutes, so a pool whose dispatcher never comes back
      # does not leave agents asking for ever.
      unreachable=$((unreachable + 1))
      [ "$unreachable" -lt 300 ] || { echo "dispatcher unreachable for five minutes; exiting"; exit 1; }
      sleep 1
    fi
  done
  field "$answer" agent_key
  AGENT_KEY=$field_value
fi

echo "shell-warm agent for task $TASK_ID checking in at $DISPATCHER_URL"
post /agent/checkin "{\"task_id\":\"$TASK_ID\"}"
post /agent/progress "{\"task_id\":\"$TASK_ID\",\"percentage\":50,\"message\":\"shell agent working\"}"
post /agent/checkback "{\"task_id\":\"$TASK_ID\",\"status\":\"completed\",\"result_metadata\":{\"agent\":\"shell-warm\"}}"
echo "shell-warm agent done"
