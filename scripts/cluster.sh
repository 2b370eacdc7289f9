#!/usr/bin/env bash
# A test cluster on this machine: N "hosts" as Linux namespaces, so that
# iomimic's MPI runs cross hosts without a second machine (docs/cluster.md).
#
#   scripts/cluster.sh start N [DIR]   create hosts h1..hN; DIR (default
#                                      /tmp/iomimic-cluster) gets the hostfile,
#                                      the rsh agent and one folder per host
#   scripts/cluster.sh stop [DIR]      remove them again (also after a crash)
#   scripts/cluster.sh mpirun [DIR] -np K ARGS...
#                                      mpirun over the cluster's hosts, with
#                                      the agent and interface options filled in
#
# Each host hI is a network namespace NAME-hI with its own UTS namespace
# (hostname hI, which MPI_Get_processor_name and so iomimic's num_hosts see)
# and one veth link to a bridge NAME-br, address NET.I/24; the bridge has
# NET.254 in this namespace, where mpirun runs. No host has a default route:
# traffic stays between the hosts and mpirun. The file system is shared:
# every host sees the same folders (the "shared file system"), except
# DIR/local, where each host has a mount namespace of its own that shows its
# DIR/hosts/hI (node-local storage at one path on every host, as on a real
# cluster: what one host writes there the others do not see).
#
# Open MPI starts its daemons on the hosts through DIR/agent, an rsh agent
# that enters the host's namespaces with nsenter (no sshd). Needs root,
# iproute2 and util-linux (nsenter, unshare). Environment: IOMIMIC_CLUSTER_NAME
# (default iomi) and IOMIMIC_CLUSTER_NET (default 10.231.0) to run two at once,
# IOMIMIC_CLUSTER_SLOTS (default 2) the slots per host in the hostfile,
# IOMIMIC_CLUSTER_SIGKILL_TIMEOUT (default 10) the seconds `mpirun` passes as
# odls_base_sigkill_timeout (the ranks' grace between SIGTERM and SIGKILL,
# see run_mpirun). Ranks per host other than the hostfile's: `--host
# h1:1,h2:2,h3:3` (it replaces the hostfile).
set -Eeuo pipefail  # -E: the ERR trap of start runs in functions too

NAME=${IOMIMIC_CLUSTER_NAME:-iomi}
NET=${IOMIMIC_CLUSTER_NET:-10.231.0}
SLOTS=${IOMIMIC_CLUSTER_SLOTS:-2}
BRIDGE="$NAME-br"

die() { echo "cluster.sh: $*" >&2; exit 1; }

need_tools() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, a bridge)"
  for tool in ip nsenter unshare mpirun; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
  done
}

hosts_of() {  # the host names recorded in DIR/hostfile
  [ -f "$1/hostfile" ] && awk '{print $1}' "$1/hostfile" || true
}

stop() {
  local dir=$1 host
  for host in $(hosts_of "$dir"); do
    ip netns del "$NAME-$host" 2>/dev/null || true
    # The link too: a namespace whose last user is still going (sockets of a
    # host whose link was cut) keeps its end of the pair a while.
    ip link del "$NAME-$host" 2>/dev/null || true
    umount "$dir/uts/$host" 2>/dev/null || true
    umount "$dir/mnt/$host" 2>/dev/null || true
  done
  umount "$dir/mnt" 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$dir/uts" "$dir/mnt" "$dir/hostfile" "$dir/agent" "$dir/mpirun-args"
  rmdir "$dir/local" 2>/dev/null || true
}

start() {
  local n=$1 dir=$2 i host
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "N must be 1-250, not '$n'"
  need_tools
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "a cluster named $NAME is running (scripts/cluster.sh stop, or IOMIMIC_CLUSTER_NAME)"
  fi
  mkdir -p "$dir/uts" "$dir/hosts" "$dir/mnt" "$dir/local"
  # A persistent mount namespace is bound to a file on a private mount.
  mount --bind "$dir/mnt" "$dir/mnt"
  mount --make-private "$dir/mnt"
  : >"$dir/hostfile"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$n"); do
    host="h$i"
    echo "$host slots=$SLOTS" >>"$dir/hostfile"
    ip netns add "$NAME-$host"
    ip link add "$NAME-$host" type veth peer name eth0 netns "$NAME-$host"
    ip link set "$NAME-$host" master "$BRIDGE" up
    ip -n "$NAME-$host" addr add "$NET.$i/24" dev eth0
    ip -n "$NAME-$host" link set eth0 up
    ip -n "$NAME-$host" link set lo up
    touch "$dir/uts/$host"
    unshare --uts="$dir/uts/$host" hostname "$host"
    mkdir -p "$dir/hosts/$host"
    touch "$dir/mnt/$host"
    # Mounts made later in this namespace still reach the host (slave).
    unshare --mount="$dir/mnt/$host" --propagation slave \
      mount --bind "$dir/hosts/$host" "$dir/local"
  done
  cat >"$dir/agent" <<EOF
#!/bin/sh
# Open MPI's rsh agent for this cluster: agent [OPTIONS] HOST COMMAND...
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
[ -e "$dir/uts/\$host" ] || { echo "cluster agent: no host \$host in $dir" >&2; exit 255; }
exec nsenter --uts="$dir/uts/\$host" --net="/run/netns/$NAME-\$host" --mount="$dir/mnt/\$host" \\
  -- /bin/sh -c "\$*"
EOF
  chmod +x "$dir/agent"
  # What mpirun needs to use the hosts: the agent, and TCP on the bridge's
  # subnet only (the hosts share no memory segment Open MPI would trust).
  # TCP keepalive on the daemons' links, so that a host that vanishes (its
  # link cut, its power lost) ends the job in about 5 s instead of hanging
  # every other rank for Open MPI's default 300 + 9 x 20 s (docs/cluster.md,
  # "Faults").
  printf '%s\n' --hostfile "$dir/hostfile" --mca plm_rsh_agent "$dir/agent" \
    --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24" \
    --mca btl tcp,self --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \
    --mca oob_tcp_keepalive_probes 3 >"$dir/mpirun-args"
  echo "cluster $NAME: $n hosts (h1..h$n on $NET.0/24), hostfile $dir/hostfile, agent $dir/agent"
}

run_mpirun() {
  local dir=$1; shift
  [ -f "$dir/mpirun-args" ] || die "no cluster in $dir (scripts/cluster.sh start N $dir)"
  local -a extra=() arg
  mapfile -t extra <"$dir/mpirun-args"
  # On Ctrl-C or a failed rank, Open MPI 4.1 waits odls_base_sigkill_timeout
  # seconds, sends the ranks SIGTERM, waits as long again, then SIGKILL. Its
  # default of 1 s cuts iomimic off while it writes its results; with this
  # grace mpirun ends 2 x the grace after a Ctrl-C or a failure instead of
  # 2 s (docs/cluster.md, "Faults").
  extra+=(--mca odls_base_sigkill_timeout "${IOMIMIC_CLUSTER_SIGKILL_TIMEOUT:-10}")
  # A host list or hostfile of the caller's replaces the cluster's hostfile.
  for arg in "$@"; do
    case "$arg" in
      --hostfile | -hostfile | --machinefile | -machinefile | --host | -host | -H)
        extra=("${extra[@]:2}") ;;
    esac
  done
  # An MCA parameter the caller sets replaces the cluster's (mpirun refuses
  # one named twice).
  local -a mine=() kept=()
  local i
  for ((i = 1; i < $#; i++)); do
    [ "${!i}" = --mca ] && { local j=$((i + 1)); mine+=("${!j}"); }
  done
  for ((i = 0; i < ${#extra[@]}; i++)); do
    if [ "${extra[i]}" = --mca ] && [[ " ${mine[*]} " == *" ${extra[i + 1]} "* ]]; then
      i=$((i + 2))
      continue
    fi
    kept+=("${extra[i]}")
  done
  extra=("${kept[@]}")
  if [ "$(id -u)" -eq 0 ]; then extra+=(--allow-run-as-root); fi
  exec mpirun "${extra[@]}" "$@"
}

cmd=${1:-}
case "$cmd" in
  start)
    [ $# -ge 2 ] || die "usage: scripts/cluster.sh start N [DIR]"
    dir=$(realpath -m "${3:-/tmp/iomimic-cluster}")
    trap 'stop "$dir"' ERR
    start "$2" "$dir"
    ;;
  stop)
    stop "$(realpath -m "${2:-/tmp/iomimic-cluster}")"
    ;;
  mpirun)
    shift
    dir=/tmp/iomimic-cluster
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$(realpath -m "$1"); shift; fi
    run_mpirun "$dir" "$@"
    ;;
  *)
    echo "usage: scripts/cluster.sh start N [DIR] | stop [DIR] | mpirun [DIR] ARGS..." >&2
    exit 2
    ;;
esac
