#!/bin/bash
# The Docker engine of the docker tests and of the container bench, and a base image made without a registry.
#
#   engine.sh up     start dockerd unless one answers; import the base image unless present; hold the engine
#   engine.sh down   let go of it; the last holder stops the dockerd this script started (nothing else)
#   engine.sh deps   install Debian's docker.io and debootstrap (CI=true does this in `up` too)
#
# The base image (PERFPLAY_BASE_IMAGE, default perfplay-base:bookworm) is a minimal Debian bookworm with
# python3 and python3-venv: debootstrap, then `docker import` (about a minute). Needs root.
# A holder is the process that ran `up` (PERFPLAY_DOCKER_HOLDER, default the caller: a test session, the bench),
# one file in $STATE/holders: two checkouts' suites on one machine share one dockerd, and one's `down` does not
# stop it under the other.
set -euo pipefail

BASE_IMAGE=${PERFPLAY_BASE_IMAGE:-perfplay-base:bookworm}
STATE=${PERFPLAY_DOCKER_DIR:-/tmp/perfplay-docker}
MIRROR=${PERFPLAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=(docker.io debootstrap)
HOLDER=${PERFPLAY_DOCKER_HOLDER:-$PPID}

die() { echo "engine.sh: $*" >&2; exit 1; }
# shellcheck source=tests/state_dir.sh
source "$(dirname "${BASH_SOURCE[0]}")/../state_dir.sh"

have_deps() { command -v dockerd >/dev/null && command -v debootstrap >/dev/null && [[ -x /usr/bin/docker ]]; }

deps() {
  have_deps && return 0
  [[ ${CI:-} == true || ${1:-} == --install ]] ||
    die "missing ${PACKAGES[*]}: run 'tests/docker/engine.sh deps' (apt-get, as root)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}" >/dev/null ||
    { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "${PACKAGES[@]}" >/dev/null; } || die "cannot install ${PACKAGES[*]}"
}

# Debian's client; another docker on PATH may be older or newer than Debian's engine.
docker() { /usr/bin/docker "$@"; }

answers() { docker info >/dev/null 2>&1; }

start_engine() {
  answers && return 0
  dockerd --pidfile "$STATE/dockerd.pid" >"$STATE/dockerd.log" 2>&1 &
  echo $! >"$STATE/started.pid"
  for _ in $(seq 60); do
    answers && return 0
    kill -0 "$(cat "$STATE/started.pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -20 "$STATE/dockerd.log" >&2
  die "dockerd did not start (log: $STATE/dockerd.log)"
}

base_image() {
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  local root=$STATE/rootfs
  rm -rf "$root"
  echo "engine.sh: debootstrap bookworm into $root, then docker import as $BASE_IMAGE" >&2
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$root" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 ||
    { tail -20 "$STATE/debootstrap.log" >&2; die "debootstrap failed (log: $STATE/debootstrap.log)"; }
  tar -C "$root" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
}

hold() { mkdir -p "$STATE/holders" && echo "$HOLDER" >"$STATE/holders/$HOLDER"; }

# Let go for HOLDER and forget holders that have ended; true when a live one is left.
still_held() {
  rm -f "$STATE/holders/$HOLDER"
  local lease left=1
  for lease in "$STATE"/holders/*; do
    [[ -f $lease ]] || continue
    if kill -0 "$(basename "$lease")" 2>/dev/null; then left=0; else rm -f "$lease"; fi
  done
  return $left
}

stop_engine() {
  still_held && return 0
  [[ -f $STATE/started.pid ]] || return 0
  local pid
  pid=$(cat "$STATE/started.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$STATE/started.pid"
}

[[ $(id -u) == 0 ]] || die "needs root (dockerd, debootstrap)"
case ${1:-} in
  up) deps; state_dir "$STATE"; hold; start_engine; base_image ;;
  down) if [[ -e $STATE ]]; then state_dir "$STATE"; stop_engine; fi ;;
  deps) deps --install ;;
  *) die "usage: engine.sh up | down | deps" ;;
esac
