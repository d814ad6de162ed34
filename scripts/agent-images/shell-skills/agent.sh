#!/bin/sh
# A busybox shell agent that installs the skills pinned on its task, as the agent SDK's
# installSkills does: downloads each package through the dispatcher, checks its SHA-256
# against the pinned content_hash (a mismatch fails the task, nothing unpacked), unpacks it
# under /tmp/skills/<slug> and reads the name from SKILL.md; then checks back completed
# with the skills it installed in result_metadata.
set -eu
: "${TASK_ID:?TASK_ID is not set}" "${DISPATCHER_URL:?DISPATCHER_URL is not set}" "${AGENT_KEY:?AGENT_KEY is not set}"

post() {
  wget -q -O - --header "X-Agent-Key: $AGENT_KEY" --header 'Content-Type: application/json' \
    --post-data "$2" "$DISPATCHER_URL$1"
}

fail() {
  echo "$1" >&2
  post /agent/checkback "{\"task_id\":\"$TASK_ID\",\"status\":\"failed\",\"error\":\"$1\"}" >/dev/null
  exit 1
}

# The value of a string or number field in one flat JSON object (any key order).
field() {
  printf '%s' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

echo "shell-skills agent for task $TASK_ID checking in at $DISPATCHER_URL"
checkin=$(post /agent/checkin "{\"task_id\":\"$TASK_ID\"}")
root=/tmp/skills
mkdir -p "$root"
installed=""
for skill in $(printf '%s' "$checkin" | grep -o '{[^{}]*"storage_ref"[^{}]*}'); do
  slug=$(field "$skill" slug)
  version=$(field "$skill" version_number)
  hash=$(field "$skill" content_hash)
  ref=$(field "$skill" storage_ref)
  case "$slug" in *[!a-z0-9-]*|"") fail "skill slug $slug is not a slug" ;; esac
  wget -q -O "$root/$slug.zip" --header "X-Agent-Key: $AGENT_KEY" --header "X-Task-Id: $TASK_ID" "$DISPATCHER_URL/agent/objects/$ref" \
    || fail "skill $slug@$version could not be downloaded"
  actual=$(sha256sum "$root/$slug.zip" | cut -c1-64)
  if [ "$actual" != "$hash" ]; then
    rm -f "$root/$slug.zip"
    fail "skill $slug@$version has SHA-256 $actual, not the pinned $hash; refused"
  fi
  unzip -q -o "$root/$slug.zip" -d "$root/$slug"
  rm -f "$root/$slug.zip"
  name=$(sed -n 's/^name: *//p' "$root/$slug/SKILL.md" | head -n 1)
  echo "installed skill $slug@$version ($name), sha256 $actual"
  installed="$installed${installed:+,}{\"slug\":\"$slug\",\"version_number\":$version,\"content_hash\":\"$actual\",\"name\":\"$name\"}"
done

post /agent/checkback "{\"task_id\":\"$TASK_ID\",\"status\":\"completed\",\"result_metadata\":{\"agent\":\"shell-skills\",\"skills\":[$installed]}}" >/dev/null
echo "shell-skills agent done"
