#!/usr/bin/env bash
# iomimic over the hosts of an Open MPI hostfile (docs/cluster.md, "Launching
# on real clusters"): generate the dataset once, then train on every host.
#
#   examples/cluster/mpirun.sh [HOSTFILE]
#
# Environment (defaults in brackets): IOMIMIC [iomimic], WORKLOAD [unet3d_h100],
# RANKS_PER_HOST [4], DATA [/shared/iomimic/data/$WORKLOAD], CHECKPOINTS
# [$DATA-checkpoints: beside the dataset, on the storage under test] and
# RESULTS [/shared/iomimic/results/$WORKLOAD-<time>]: all on the shared file
# system (every rank writes its <rank>_output.json into RESULTS), MPIRUN
# [mpirun], SIGKILL_GRACE [10] (seconds, see below) and OVERRIDES (more
# ++workload.k=v, space separated).
set -euo pipefail

HOSTFILE=${1:-$(dirname "$0")/hostfile}
IOMIMIC=${IOMIMIC:-iomimic}
WORKLOAD=${WORKLOAD:-unet3d_h100}
RANKS_PER_HOST=${RANKS_PER_HOST:-4}
DATA=${DATA:-/shared/iomimic/data/$WORKLOAD}
CHECKPOINTS=${CHECKPOINTS:-$DATA-checkpoints}
RESULTS=${RESULTS:-/shared/iomimic/results/$WORKLOAD-$(date +%Y%m%d-%H%M%S)}
SIGKILL_GRACE=${SIGKILL_GRACE:-10}
read -r -a MPIRUN <<<"${MPIRUN:-mpirun}"
read -r -a EXTRA <<<"${OVERRIDES:-}"

HOSTS=$(grep -cv '^\s*\(#\|$\)' "$HOSTFILE")
RANKS=$((HOSTS * RANKS_PER_HOST))

# Host by host (ppr:N:node), so that checkpoint.recovery_rank_shift reads
# each shard on another host than wrote it. Open MPI's daemons notice a lost
# host within ~5 s with these keepalive settings (default: 8 minutes). On
# Ctrl-C or a failed rank, Open MPI 4.1 waits odls_base_sigkill_timeout
# seconds, sends the ranks SIGTERM, waits as long again, then SIGKILL (the
# default of 1 s cuts iomimic off while it writes its results): the ranks
# get SIGKILL_GRACE seconds to write them, and mpirun ends 2 x SIGKILL_GRACE
# seconds after a Ctrl-C or a failure.
COMMON=(--hostfile "$HOSTFILE" --map-by "ppr:$RANKS_PER_HOST:node" --bind-to none
        --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1
        --mca oob_tcp_keepalive_probes 3 --mca odls_base_sigkill_timeout "$SIGKILL_GRACE")
# Checkpoints go to the storage under test, not to a folder relative to
# each rank's working directory.
WHERE=("++workload.dataset.data_folder=$DATA" "++workload.checkpoint.checkpoint_folder=$CHECKPOINTS")

# 1. The dataset, once: every rank writes its share of the files.
"${MPIRUN[@]}" "${COMMON[@]}" -np "$RANKS" "$IOMIMIC" generate "workload=$WORKLOAD" "${WHERE[@]}" \
  "${EXTRA[@]}"
# 2. Training, reading what step 1 wrote; results in one shared folder.
"${MPIRUN[@]}" "${COMMON[@]}" -np "$RANKS" "$IOMIMIC" run "workload=$WORKLOAD" "${WHERE[@]}" \
  "++workload.workflow.generate_data=False" "++workload.output.folder=$RESULTS" "${EXTRA[@]}"
echo "results: $RESULTS"
