#!/usr/bin/env bash
# An event becomes an agent run: creates (or replaces) the workflow "demo-push" bound to
# forge push events on one repository, sends a signed push with curl, and waits for the
# echo agent's run to finish under the workflow. See docs/webhooks.md.
#
# Settings (environment):
#   CONTROLLER_URL         default http://127.0.0.1:8000
#   API_TOKEN              default: read from $DATA_DIR/secrets.json (embedded mode)
#   FORGE_WEBHOOK_SECRET   when the controller has one, the push is signed with it
#   DEMO_REPOSITORY        default acme/demo
#   DEMO_TIMEOUT_SECONDS   how long to wait for the run, default 60
set -euo pipefail

CONTROLLER_URL="${CONTROLLER_URL:-http://127.0.0.1:8000}"
DATA_DIR="${DATA_DIR:-./.data}"
REPOSITORY="${DEMO_REPOSITORY:-acme/demo}"
TIMEOUT="${DEMO_TIMEOUT_SECONDS:-60}"
WORKFLOW=demo-push

if [ -z "${API_TOKEN:-}" ]; then
  if [ ! -f "$DATA_DIR/secrets.json" ]; then
    echo "API_TOKEN is not set and $DATA_DIR/secrets.json does not exist: start the system with 'npm start' first." >&2
    exit 1
  fi
  API_TOKEN="$(node -p "require(require('path').resolve('$DATA_DIR/secrets.json')).API_TOKEN")"
fi

# Reads one field of the JSON document on stdin: json_field task_guid
json_field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=process.argv[1].split(".").reduce((o,k)=>o==null?o:o[k],JSON.parse(s));console.log(typeof v==="object"?JSON.stringify(v):v??"")})' "$1"; }

api() { # api METHOD PATH [JSON]; prints the body, then the status on the last line
  local method="$1" path="$2"
  shift 2
  curl -sS -X "$method" "$CONTROLLER_URL$path" -H "Authorization: Token $API_TOKEN" \
    -H 'Content-Type: application/json' ${1:+--data-binary "$1"} -w '\n%{http_code}'
}

WORKFLOW_BODY=$(cat <<JSON
{
  "id": "$WORKFLOW",
  "name": "Echo every push to $REPOSITORY",
  "priority": 10,
  "triggers": [{"source": "forge", "event": "push", "filter": {"repository.full_name": "$REPOSITORY"}}],
  "task_template": {
    "agent_image": "agent-examples/echo",
    "runtime_target": {"type": "local", "namespace": ""},
    "resources": {"cpu": "500m", "memory": "256Mi"},
    "timeout_seconds": 120,
    "brief": {
      "task": "Summarise the push to {{payload.repository.full_name}}",
      "ref": "{{payload.ref}}",
      "commit": "{{payload.head_commit.id}}",
      "message": "{{payload.head_commit.message}}",
      "pusher": "{{payload.pusher.name}}"
    }
  }
}
JSON
)

echo "1. Creating the workflow $WORKFLOW (forge push on $REPOSITORY, image agent-examples/echo)"
answer=$(api POST /api/v1/workflows/ "$WORKFLOW_BODY")
status=$(tail -n1 <<<"$answer")
if [ "$status" = 409 ]; then
  answer=$(api PUT "/api/v1/workflows/$WORKFLOW/" "$WORKFLOW_BODY")
  status=$(tail -n1 <<<"$answer")
fi
if [ "$status" != 201 ] && [ "$status" != 200 ]; then
  echo "   refused ($status): $(sed '$d' <<<"$answer")" >&2
  exit 1
fi

COMMIT=$(node -p "require('crypto').randomBytes(20).toString('hex')")
PUSH=$(printf '{"ref":"refs/heads/main","after":"%s","repository":{"full_name":"%s"},"pusher":{"name":"demo"},"head_commit":{"id":"%s","message":"Demo push"}}' "$COMMIT" "$REPOSITORY" "$COMMIT")
DELIVERY=$(node -p "require('crypto').randomUUID()")
SIGNATURE_HEADER=()
if [ -n "${FORGE_WEBHOOK_SECRET:-}" ]; then
  SIGNATURE="sha256=$(printf '%s' "$PUSH" | openssl dgst -sha256 -hmac "$FORGE_WEBHOOK_SECRET" -r | cut -d' ' -f1)"
  SIGNATURE_HEADER=(-H "X-Hub-Signature-256: $SIGNATURE")
  echo "2. Sending a push signed with FORGE_WEBHOOK_SECRET (delivery $DELIVERY)"
else
  echo "2. Sending an unsigned push (no FORGE_WEBHOOK_SECRET; the controller takes unsigned deliveries outside production)"
fi
answer=$(curl -sS -X POST "$CONTROLLER_URL/api/v1/webhooks/" -H 'Content-Type: application/json' \
  -H 'X-GitHub-Event: push' -H "X-GitHub-Delivery: $DELIVERY" "${SIGNATURE_HEADER[@]}" \
  --data-binary "$PUSH" -w '\n%{http_code}')
status=$(tail -n1 <<<"$answer")
body=$(sed '$d' <<<"$answer")
echo "   $status $body"
TASK=$(json_field task_guid <<<"$body")
if [ "$status" != 200 ] || [ -z "$TASK" ]; then
  echo "   the push was not routed to a task" >&2
  exit 1
fi

echo "3. Waiting for task $TASK (up to ${TIMEOUT}s)"
deadline=$((SECONDS + TIMEOUT))
while :; do
  task=$(api GET "/api/v1/tasks/$TASK/" | sed '$d')
  state=$(json_field status <<<"$task")
  case "$state" in
    completed | failed | timed_out | cancelled) break ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "   still $state after ${TIMEOUT}s" >&2
    exit 1
  fi
  sleep 1
done
echo "   $state: $(json_field result <<<"$task")"

echo "4. Runs of $WORKFLOW (newest first):"
api GET "/api/v1/workflows/$WORKFLOW/runs/?limit=5" | sed '$d' |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const t of JSON.parse(s).results)console.log(`   ${t.created_at}  ${t.guid}  ${t.status}  ${t.result?.result_key??""}`)})'
[ "$state" = completed ]
