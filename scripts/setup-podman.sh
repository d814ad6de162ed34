#!/bin/sh
# Makes a Docker-compatible container engine available for the `docker` local engine's
# tests: installs Podman and runc when missing, configures them for this kind of machine
# (runc, explicit ulimits), builds the tiny local agent images
# localhost/agent-examples/shell-echo:latest, localhost/agent-examples/shell-skills:latest and
# localhost/agent-examples/shell-warm:latest
# from busybox-static (one per folder of scripts/agent-images), and serves Podman's
# Docker Engine API on a unix socket. Safe to run again: every step checks first.
#
# Progress goes to stderr; stdout is only the DOCKER_HOST to use, so:
#   export DOCKER_HOST="$(scripts/setup-podman.sh)"
#
# Settings: ATC_PODMAN_DIR (default /tmp/atc-podman) holds the socket, containers.conf,
# the image's build folder and the service log.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dir=${ATC_PODMAN_DIR:-/tmp/atc-podman}
socket="$dir/podman.sock"

say() { echo "[setup-podman] $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
  missing=""
  command -v podman >/dev/null 2>&1 || missing="$missing podman"
  command -v runc >/dev/null 2>&1 || missing="$missing runc"
  dpkg -s busybox-static >/dev/null 2>&1 || missing="$missing busybox-static"
  if [ -n "$missing" ]; then
    say "installing$missing"
    as_root apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
  fi
}

# crun fails on hybrid cgroups and setrlimit here; runc with explicit ulimits works.
write_containers_conf() {
  mkdir -p "$dir"
  cat > "$dir/containers.conf.new" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONF
  mv "$dir/containers.conf.new" "$dir/containers.conf"
}

# No registry is reachable: the image is a busybox rootfs imported as a tarball. A label
# carries the hash of the agent script and of this recipe, so a change to either rebuilds it.
# /tmp is 1777 as in any distribution image: agents run as a non-root user, and engines give
# a tmpfs mounted there the image folder's mode.
recipe="rootfs-v2: busybox applets, /tmp 1777"
build_agent_image() {
  image="localhost/agent-examples/$1:latest"
  agent_script="$here/agent-images/$1/agent.sh"
  want=$( { echo "$recipe"; cat "$agent_script"; } | sha256sum | cut -c1-64)
  have=$(podman image inspect --format '{{index .Labels "agent-script-sha256"}}' "$image" 2>/dev/null || true)
  if [ "$have" = "$want" ]; then
    say "image $image is up to date"
    return
  fi
  say "building $image"
  rootfs="$dir/$1-rootfs"
  rm -rf "$rootfs"
  mkdir -p "$rootfs/bin" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  cp /bin/busybox "$rootfs/bin/busybox"
  for applet in sh wget nc printf head wc cat echo sleep env grep rm tr sed mkdir cut sha256sum unzip; do
    ln -s busybox "$rootfs/bin/$applet"
  done
  cp "$agent_script" "$rootfs/agent.sh"
  chmod 0755 "$rootfs/agent.sh"
  tar -C "$rootfs" -c . | podman import \
    --change 'CMD ["/bin/sh", "/agent.sh"]' \
    --change 'ENV PATH=/bin' \
    --change "LABEL agent-script-sha256=$want" \
    - "$image" >&2
}

service_answers() {
  [ -S "$socket" ] && podman --url "unix://$socket" version >/dev/null 2>&1
}

start_service() {
  if service_answers; then
    say "Podman service already answers on $socket"
    return
  fi
  rm -f "$socket"
  say "starting podman system service on $socket (log: $dir/service.log)"
  # Started from its own folder: conmon inherits the service's working directory, and a
  # checkout removed while the service runs would fail every later container start.
  (cd "$dir" && exec nohup podman system service --time=0 "unix://$socket" >"$dir/service.log" 2>&1) &
  echo $! > "$dir/service.pid"
  tries=0
  until service_answers; do
    tries=$((tries + 1))
    if [ "$tries" -gt 60 ]; then
      say "the Podman service did not answer within 30 s; see $dir/service.log"
      exit 1
    fi
    sleep 0.5
  done
}

install_packages
write_containers_conf
export CONTAINERS_CONF="$dir/containers.conf"
build_agent_image shell-echo
build_agent_image shell-skills
build_agent_image shell-warm
start_service
say "ready: DOCKER_HOST=unix://$socket"
echo "unix://$socket"
