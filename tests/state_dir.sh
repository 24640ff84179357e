#!/usr/bin/env bash
# Sourced by the test tooling (tests/cluster/hosts.sh, tests/docker/engine.sh): a fixed state directory under
# the system temp dir is used only when no other user could have made or changed it first.
#   state_dir DIR   create DIR (mode 0755) or check the existing one: a real directory, owned by this user, not
#                   writable by group or others; on failure, say why and exit 1.

state_dir() {
  local dir=$1 owner mode
  if [[ -L $dir ]]; then
    printf 'error: %s is a symlink: refusing to keep keys or a venv there (remove it or set another dir)\n' "$dir" >&2
    exit 1
  fi
  if [[ ! -e $dir ]]; then
    mkdir -m 0755 -- "$dir" 2>/dev/null || true  # made meanwhile by someone else: checked below
  fi
  if [[ -L $dir || ! -d $dir ]]; then
    printf 'error: %s is not a directory\n' "$dir" >&2
    exit 1
  fi
  read -r owner mode < <(stat -c '%u %a' -- "$dir")
  if [[ $owner != "$(id -u)" ]]; then
    printf 'error: %s belongs to uid %s, not to uid %s: another user made it first; remove it or set another dir\n' \
      "$dir" "$owner" "$(id -u)" >&2
    exit 1
  fi
  if (( (8#$mode & 8#022) != 0 )); then
    printf 'error: %s is writable by group or others (mode %s): chmod go-w it or set another dir\n' "$dir" "$mode" >&2
    exit 1
  fi
}
