#!/usr/bin/env bash
# A test cluster on one machine: hosts node1..nodeN as Linux network namespaces on a bridge, each with
# its own PID/mount/UTS namespace, private /opt/perfplay and sshd, for real Ansible-over-SSH tests.
#
#   tests/cluster/hosts.sh up N [--user NAME] [--install]   create node1..nodeN (1..32); replaces a running cluster
#   tests/cluster/hosts.sh down [--purge]                   stop everything; --purge also deletes the state dir
#   tests/cluster/hosts.sh status                           hosts and whether their sshd answers
#   tests/cluster/hosts.sh deps [--install]                 check (or install, also when CI=true) the packages
#   tests/cluster/hosts.sh info                             this checkout's names (state=, net=, ...), one a line
#
# Each checkout has its own cluster, named by TAG (6 hex digits of its path's sha256), so that clusters of several
# checkouts on one machine leave each other alone.
# State: ${PERFPLAY_CLUSTER_DIR:-/tmp/perfplay-cluster-TAG} (inventory.yml, hosts.txt, keys, known_hosts, hosts/),
# used only if this user owns it and nobody else can write to it. The hosts' venv, shared by the checkouts:
# /tmp/perfplay-cluster-venvs/SHA (SHA: of the requirements files).
# Network: bridge ppTAG-br, NET.1/24; nodeI = netns ppTAG-nodeI, eth0 NET.(10+I)/24, no route elsewhere. NET:
# ${PERFPLAY_CLUSTER_NET:-10.X.Y} with X (160..223) and Y from TAG; up refuses a NET this machine already uses.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly REPO
TAG=$(printf '%s' "$REPO" | sha256sum | cut -c1-6)
readonly TAG
readonly STATE=${PERFPLAY_CLUSTER_DIR:-/tmp/perfplay-cluster-$TAG}
readonly VENVS=/tmp/perfplay-cluster-venvs
readonly INIT=$REPO/tests/cluster/ns_init.py
# Interface names have at most 15 characters: ppTAG-br, ppTAG-vNN, ppTAG-tNN.
readonly BRIDGE=pp$TAG-br
readonly NETNS=pp$TAG-node  # + I
readonly NET=${PERFPLAY_CLUSTER_NET:-10.$((160 + 16#${TAG:0:2} % 64)).$((16#${TAG:2:2}))}
readonly MAX_HOSTS=32
readonly SSH_WAIT_S=${PERFPLAY_CLUSTER_SSH_WAIT_S:-60}
readonly FW_COMMENT=perfplay-cluster-$TAG
# shellcheck source=tests/state_dir.sh
source "$REPO/tests/state_dir.sh"

log() { printf 'hosts.sh: %s\n' "$*" >&2; }
die() { printf 'hosts.sh: error: %s\n' "$*" >&2; exit 1; }

usage() {
  sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

require_root() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces, bridge, sshd): sudo $0 $*"
}

host_ip() { echo "$NET.$((10 + $1))"; }

# --- deps -------------------------------------------------------------------------------------------

# "command package" pairs that up needs.
readonly NEEDED=(
  "/usr/sbin/sshd openssh-server"
  "ssh openssh-client"
  "ssh-keygen openssh-client"
  "ip iproute2"
  "unshare util-linux"
  "setsid util-linux"
  "flock util-linux"
  "mount mount"
  "/usr/bin/python3 python3"
)

missing_packages() {
  local pair cmd pkg missing=()
  for pair in "${NEEDED[@]}"; do
    read -r cmd pkg <<<"$pair"
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
    missing+=(python3-venv)
  fi
  ((${#missing[@]})) && printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' '
  return 0
}

cmd_deps() {
  local install=false
  [[ ${CI:-} == true ]] && install=true
  while (($#)); do
    case $1 in
      --install) install=true ;;
      *) die "deps: unknown argument: $1" ;;
    esac
    shift
  done
  local missing
  missing=$(missing_packages)
  [[ -z $missing ]] && return 0
  if ! $install; then
    die "missing packages: ${missing% }. Install them with:
    apt-get update && apt-get install -y --no-install-recommends ${missing% }
  (or rerun with --install, or with CI=true)"
  fi
  require_root deps
  log "installing: ${missing% }"
  # shellcheck disable=SC2086  # word splitting of the package list is intended
  DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
  missing=$(missing_packages)
  [[ -z $missing ]] || die "still missing after install: $missing"
}

# --- venv ---------------------------------------------------------------------------------------------

# The hosts' perfplay venv, shared by all hosts (they have no network) and by the clusters of every checkout with
# the same requirements.txt and requirements-*.txt: $VENVS/SHA, built once under a lock. Sets VENV.
VENV=""
ensure_venv() {
  local req=$REPO/requirements.txt want
  [[ -f $req ]] || die "no $req"
  want=$(cat "$req" "$REPO"/requirements-*.txt | sha256sum | cut -c1-16)
  VENV=$VENVS/$want
  state_dir "$VENVS"
  exec {lock}>"$VENVS/.lock"
  flock "$lock"  # another checkout may be building the same venv
  if [[ -f $VENV/.built && -x $VENV/bin/python ]]; then
    exec {lock}>&-
    log "venv: $VENV is current"
    return 0
  fi
  log "venv: building $VENV from $req (takes minutes the first time)"
  local t0=$SECONDS
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  if ! "$VENV/bin/pip" install -r "$req" >"$VENV.log" 2>&1; then
    tail -n 30 "$VENV.log" >&2
    die "venv: pip install -r $req failed (log: $VENV.log)"
  fi
  chmod -R a+rX "$VENV"
  touch "$VENV/.built"  # last: an interrupted build is rebuilt
  exec {lock}>&-
  log "venv: built in $((SECONDS - t0)) s"
}

# --- users, keys, files ------------------------------------------------------------------------------

ensure_user() {
  local user=$1
  [[ $user == root ]] && return 0
  if ! id "$user" >/dev/null 2>&1; then
    log "creating user $user"
    useradd --create-home --shell /bin/bash "$user"
  fi
  # Without PAM sshd refuses locked accounts ("!" in shadow, useradd's default): "*" = no password, not locked.
  local pw
  pw=$(getent shadow "$user" | cut -d: -f2)
  if [[ $pw == "!" || $pw == "!*" || -z $pw ]]; then
    usermod -p '*' "$user"
  fi
}

write_host_files() {
  local i=$1 user=$2 name="node$1" dir="$STATE/hosts/node$1" ip
  ip=$(host_ip "$i")
  mkdir -p "$dir/opt"
  chmod 0755 "$dir"
  chown -R "$user:" "$dir/opt"
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$dir/ssh_host_ed25519_key"
  cat >"$dir/sshd_config" <<EOF
# sshd of test-cluster host $name (written by tests/cluster/hosts.sh)
ListenAddress $ip
Port 22
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
MaxSessions 50
MaxStartups 100
LoginGraceTime 30
PrintMotd no
Subsystem sftp internal-sftp
EOF
  /usr/sbin/sshd -t -f "$dir/sshd_config" || die "$name: invalid $dir/sshd_config"
}

write_cluster_files() {
  local n=$1 user=$2 i ip
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    for ((i = 1; i <= n; i++)); do echo "$(host_ip "$i") node$i"; done
  } >"$STATE/etc_hosts"
  : >"$STATE/known_hosts"
  : >"$STATE/hosts.txt"
  for ((i = 1; i <= n; i++)); do
    ip=$(host_ip "$i")
    echo "$ip $(cut -d' ' -f1,2 "$STATE/hosts/node$i/ssh_host_ed25519_key.pub")" >>"$STATE/known_hosts"
    echo "node$i $ip" >>"$STATE/hosts.txt"
  done
  chmod 0644 "$STATE/etc_hosts" "$STATE/known_hosts" "$STATE/hosts.txt"
  {
    echo "# test cluster of tests/cluster/hosts.sh: $n host(s), user $user"
    echo "all:"
    echo "  children:"
    echo "    perfplay_hosts:"
    echo "      hosts:"
    for ((i = 1; i <= n; i++)); do echo "        node$i: {ansible_host: $(host_ip "$i")}"; done
    echo "      vars:"
    echo "        ansible_user: $user"
    echo "        ansible_ssh_private_key_file: $STATE/id_ed25519"
    echo "        ansible_ssh_common_args: \"-o UserKnownHostsFile=$STATE/known_hosts\""
    echo "        ansible_python_interpreter: /usr/bin/python3"
    echo "        perfplay_project_dir: /opt/perfplay/src"
    echo "        perfplay_venv: $VENV"
    echo "        perfplay_host_results_dir: /opt/perfplay/results"
  } >"$STATE/inventory.yml"
  chmod 0644 "$STATE/inventory.yml"
}

write_client_key() {
  local user=$1
  rm -f "$STATE/id_ed25519" "$STATE/id_ed25519.pub"
  ssh-keygen -q -t ed25519 -N '' -C perfplay-cluster -f "$STATE/id_ed25519"
  chown "$user:" "$STATE/id_ed25519" "$STATE/id_ed25519.pub"  # root reads it anyway
  cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
  chmod 0644 "$STATE/authorized_keys" "$STATE/id_ed25519.pub"
}

# --- network ---------------------------------------------------------------------------------------

disable_ipv6() {  # [netns] iface: no IPv6 on the test network (no DAD / router solicitation noise)
  local f
  if (($# == 2)); then
    f=/proc/sys/net/ipv6/conf/$2/disable_ipv6
    ip netns exec "$1" sh -c "[ -w $f ] && echo 1 > $f" || true
  else
    f=/proc/sys/net/ipv6/conf/$1/disable_ipv6
    if [[ -w $f ]]; then echo 1 >"$f"; fi
  fi
}

# With br_netfilter loaded, bridged frames go through iptables FORWARD: accept ppbr0<->ppbr0 when it filters.
firewall_open() {
  [[ $(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo 0) == 1 ]] || return 0
  command -v iptables >/dev/null 2>&1 || return 0
  local rules
  rules=$(iptables -w -S FORWARD 2>/dev/null) || return 0
  if [[ $rules == "-P FORWARD ACCEPT" ]]; then return 0; fi
  log "bridge netfilter is on and iptables FORWARD filters: adding an ACCEPT rule for $BRIDGE<->$BRIDGE"
  iptables -w -I FORWARD 1 -i "$BRIDGE" -o "$BRIDGE" -m comment --comment "$FW_COMMENT" -j ACCEPT
}

firewall_close() {
  command -v iptables >/dev/null 2>&1 || return 0
  while iptables -w -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment "$FW_COMMENT" -j ACCEPT \
    2>/dev/null; do :; done
}

# NET must be this cluster's alone: no address or route of this machine (another cluster's bridge, a VPN, a
# docker network) may lie in or cover NET.0/24, or the hosts' traffic would go astray.
check_net_free() {
  [[ $NET =~ ^(10|172|192)\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
    die "PERFPLAY_CLUSTER_NET='$NET': expected the first three numbers of a private /24, e.g. 10.200.7"
  local used
  used=$( { ip -4 route show root "$NET.0/24"; ip -4 route show match "$NET.0/24" | grep -v '^default'; } 2>/dev/null |
    grep -v " dev $BRIDGE " | sort -u || true)
  [[ -z $used ]] || die "network $NET.0/24 (from this checkout's path, tag $TAG) is in use on this machine:
$used
  set PERFPLAY_CLUSTER_NET to the first three numbers of a free private /24 (e.g. PERFPLAY_CLUSTER_NET=10.201.7)"
}

bridge_up() {
  ip link add "$BRIDGE" type bridge stp_state 0 forward_delay 0
  disable_ipv6 "$BRIDGE"
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  firewall_open
}

host_net_up() {
  local i=$1 ns="$NETNS$1" veth="pp$TAG-v$1" tmp="pp$TAG-t$1"
  ip netns add "$ns"
  ip link add "$veth" type veth peer name "$tmp"
  disable_ipv6 "$veth"
  ip link set "$veth" master "$BRIDGE"
  ip link set "$veth" up
  ip link set "$tmp" netns "$ns"
  ip -n "$ns" link set "$tmp" name eth0
  disable_ipv6 "$ns" eth0  # lo keeps ::1
  ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
}

# --- hosts -----------------------------------------------------------------------------------------

# Start nodeI's init (PID 1 of its namespaces), daemonised; record the init's pid as seen from here.
host_start() {
  local i=$1 dir="$STATE/hosts/node$1" upid ipid="" t
  setsid nohup ip netns exec "$NETNS$i" \
    unshare --pid --mount --uts --fork --mount-proc --kill-child=SIGTERM \
    /usr/bin/python3 "$INIT" --hostname "node$i" --opt-src "$dir/opt" --etc-hosts "$STATE/etc_hosts" \
    --sshd-config "$dir/sshd_config" --sshd-log "$dir/sshd.log" \
    </dev/null >>"$dir/init.log" 2>&1 &
  upid=$!
  echo "$upid" >"$dir/unshare.pid"
  # The init is unshare's only child.
  for ((t = 0; t < 100; t++)); do
    ipid=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null || true)
    ipid=${ipid%% *}
    [[ -n $ipid ]] && break
    kill -0 "$upid" 2>/dev/null || break
    sleep 0.05
  done
  [[ -n $ipid ]] || { show_logs "$i"; die "node$i: init did not start"; }
  echo "$ipid" >"$dir/init.pid"
}

show_logs() {
  local dir="$STATE/hosts/node$1" f
  for f in "$dir/init.log" "$dir/sshd.log"; do
    [[ -f $f ]] || continue
    printf -- '--- %s (last 30 lines)\n' "$f" >&2
    tail -n 30 "$f" >&2
  done
}

ssh_true() {  # user ip [timeout]: a real login, host key verified
  ssh -i "$STATE/id_ed25519" -o UserKnownHostsFile="$STATE/known_hosts" -o StrictHostKeyChecking=yes \
    -o BatchMode=yes -o ConnectTimeout="${3:-3}" -o LogLevel=ERROR "$1@$2" true </dev/null >&2
}

wait_ssh() {  # n user: until every host takes a login (tried in parallel), or SSH_WAIT_S passes
  local n=$1 user=$2 i deadline=$((SECONDS + SSH_WAIT_S)) pending=()
  for ((i = 1; i <= n; i++)); do pending+=("$i"); done
  while :; do
    local -A job=()
    local left=()
    for i in "${pending[@]}"; do
      ssh_true "$user" "$(host_ip "$i")" 2>/dev/null &
      job[$i]=$!
    done
    for i in "${pending[@]}"; do wait "${job[$i]}" || left+=("$i"); done
    ((${#left[@]})) || return 0
    pending=("${left[@]}")
    if ((SECONDS >= deadline)); then
      for i in "${pending[@]}"; do
        log "node$i ($(host_ip "$i")): no ssh login as $user after ${SSH_WAIT_S}s; last attempt:"
        ssh_true "$user" "$(host_ip "$i")" || true
        show_logs "$i"
      done
      die "${#pending[@]} host(s) not reachable over ssh (cluster left up to inspect; '$0 down' stops it)"
    fi
    sleep 0.3
  done
}

# nodeI -> nodeJ over the bridge (no ping needed): catches a firewall that drops bridged traffic.
check_forwarding() {
  local n=$1
  ((n >= 2)) || return 0
  if ! ip netns exec "${NETNS}1" timeout 5 bash -c "exec 3<>/dev/tcp/$(host_ip 2)/22" 2>/dev/null; then
    die "node1 cannot reach node2 ($(host_ip 2):22) over $BRIDGE: bridged traffic is filtered
  (net.bridge.bridge-nf-call-iptables=$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo '?');
  check the iptables/nftables forward chain; cluster left up: '$0 down' stops it)"
  fi
}

cluster_exists() {
  [[ -d $STATE/hosts ]] || ip link show "$BRIDGE" >/dev/null 2>&1 || [[ -n $(list_netns) ]]
}

list_netns() { ip netns list 2>/dev/null | awk -v re="^$NETNS[0-9]+\$" '$1 ~ re {print $1}'; }

# --- commands --------------------------------------------------------------------------------------

cmd_up() {
  local n="" user=root install=() i
  while (($#)); do
    case $1 in
      --user) (($# >= 2)) || die "--user needs a name"; user=$2; shift ;;
      --user=*) user=${1#--user=} ;;
      --install) install=(--install) ;;
      -h | --help) usage ;;
      *) [[ -z $n ]] || die "up: unexpected argument: $1"; n=$1 ;;
    esac
    shift
  done
  if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n > MAX_HOSTS)); then
    die "up: N must be 1..$MAX_HOSTS (got '$n')"
  fi
  [[ $user =~ ^[a-z_][a-z0-9_-]*$ ]] || die "up: bad user name '$user'"
  require_root up
  cmd_deps "${install[@]+"${install[@]}"}"
  local t0=$SECONDS
  if cluster_exists; then
    log "a cluster exists: taking it down first"
    cmd_down
  fi
  ensure_user "$user"
  state_dir "$STATE"  # it holds the controller's key: nobody else may have made it
  mkdir -p "$STATE/hosts"
  chmod 0755 "$STATE/hosts"
  ensure_venv
  local t1=$SECONDS
  mkdir -p /opt/perfplay /run/sshd
  chmod 0755 /run/sshd

  write_client_key "$user"
  for ((i = 1; i <= n; i++)); do write_host_files "$i" "$user"; done
  write_cluster_files "$n" "$user"
  check_net_free
  bridge_up
  for ((i = 1; i <= n; i++)); do host_net_up "$i"; done
  for ((i = 1; i <= n; i++)); do host_start "$i"; done
  wait_ssh "$n" "$user"
  check_forwarding "$n"

  cat <<EOF
perfplay test cluster up: $n host(s) node1..node$n ($(host_ip 1)..$(host_ip "$n")), user $user, $((SECONDS - t1)) s (+$((t1 - t0)) s teardown/venv)
  inventory: $STATE/inventory.yml   (hosts: $STATE/hosts.txt, group perfplay_hosts)
  host venv: $VENV  (per-host /opt/perfplay: $STATE/hosts/nodeI/opt)
  use:       cd $REPO && .venv/bin/ansible-playbook -i $STATE/inventory.yml run_case.yml ...
  ssh:       ssh -i $STATE/id_ed25519 -o UserKnownHostsFile=$STATE/known_hosts $user@$(host_ip 1)
  stop:      $0 down
EOF
}

# Stop processes we started: SIGTERM all, wait up to $1 s for all, then SIGKILL the rest.
stop_pids() {
  local wait_s=$1 pid t alive=()
  shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((t = 0; t < wait_s * 20; t++)); do
    alive=()
    for pid; do if running "$pid"; then alive+=("$pid"); fi; done
    ((${#alive[@]})) || return 0
    sleep 0.05
  done
  log "pid(s) ${alive[*]} ignored SIGTERM: SIGKILL"
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

running() {  # pid: alive and not a zombie (exited children of PID 1 wait there to be reaped)
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

is_init() { grep -qF ns_init.py "/proc/$1/cmdline" 2>/dev/null; }  # pids are reused: is it still ours?

cmd_down() {
  local purge=false ns pid link
  while (($#)); do
    case $1 in
      --purge) purge=true ;;
      *) die "down: unknown argument: $1" ;;
    esac
    shift
  done
  require_root down
  if [[ -e $STATE ]]; then state_dir "$STATE"; fi  # its pid files are trusted only if nobody else could write them
  # Each init: SIGTERM stops sshd, init exits, the kernel kills the rest of its PID namespace.
  local inits=() unshares=() f
  for f in "$STATE"/hosts/node*/init.pid; do
    [[ -f $f ]] || continue
    pid=$(<"$f")
    if is_init "$pid"; then inits+=("$pid"); fi
    f=${f%/init.pid}/unshare.pid
    if [[ -f $f ]]; then
      pid=$(<"$f")
      if is_init "$pid"; then unshares+=("$pid"); fi
    fi
  done
  stop_pids 5 "${inits[@]+"${inits[@]}"}"
  stop_pids 2 "${unshares[@]+"${unshares[@]}"}"
  # Whatever is still in a host's network namespace (e.g. `ip netns exec ${NETNS}I ...`), then the namespaces.
  for ns in $(list_netns); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || log "could not delete netns $ns"
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E "^pp$TAG-v[0-9]+\$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  firewall_close
  if $purge; then
    rm -rf "$STATE"
    log "down: cluster stopped, $STATE removed"
  elif [[ -d $STATE ]]; then
    find "$STATE" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
    log "down: cluster stopped (the hosts' venvs stay in $VENVS)"
  else
    log "down: cluster stopped"
  fi
}

cmd_status() {
  local user name ip state init
  if [[ ! -f $STATE/hosts.txt ]]; then
    echo "no cluster ($STATE/hosts.txt missing)"
    ip link show "$BRIDGE" >/dev/null 2>&1 && echo "but bridge $BRIDGE exists: run '$0 down'"
    return 0
  fi
  user=$(awk '$1 == "ansible_user:" {print $2}' "$STATE/inventory.yml")
  echo "cluster in $STATE, user $user, inventory $STATE/inventory.yml"
  printf '%-8s %-14s %-12s %s\n' HOST IP INIT SSH
  while read -r name ip; do
    init=down
    if [[ -f $STATE/hosts/$name/init.pid ]] && is_init "$(<"$STATE/hosts/$name/init.pid")"; then
      init="pid $(<"$STATE/hosts/$name/init.pid")"
    fi
    if ssh_true "$user" "$ip" 2 2>/dev/null; then state=up; else state=DOWN; fi
    printf '%-8s %-14s %-12s %s\n' "$name" "$ip" "$init" "$state"
  done <"$STATE/hosts.txt"
}

# For the Python side (tests/cluster/cluster.py, bench/control_plane.py): the one definition of the names is here.
cmd_info() {
  printf '%s\n' "tag=$TAG" "state=$STATE" "net=$NET" "bridge=$BRIDGE" "netns_prefix=$NETNS"
}

main() {
  (($#)) || usage
  local cmd=$1
  shift
  case $cmd in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    deps) cmd_deps "$@" ;;
    info) cmd_info ;;
    -h | --help | help) usage ;;
    *) log "unknown command: $cmd"; usage ;;
  esac
}

main "$@"
