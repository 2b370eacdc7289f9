#!/usr/bin/env bash
# The gds storage plugin on a real NVIDIA GPU (plugins/storage/gds/README.md,
# "Checked on a GPU"): its unit tests on each data path (emulated, cuda-bounce, cufile: the
# device bytes are copied back and compared), then a shrunk unet3d_h100 run
# (npz, decode off) on posix and on every gds path, with the summary's figures
# in one table, and the KV-cache accelerator tier in device memory
# (bench/kvcache_gpu_tier.py, OUT/kvcache_gpu_tier.md). Needs a bundle made by scripts/bundle.sh (with the program
# iomimic_storage_gds_test) and the CUDA runtime and cuFile libraries
# somewhere under /usr, /opt or the Python site-packages (NVIDIA's wheels).
#
#   scripts/gpu_check.sh BUNDLE OUT [WORK]
#
# GPU_CHECK_FILES (default 56 files, about 8 GB) and GPU_CHECK_EPOCHS
# (default 3) size the run.
# Writes OUT/gpu_check.log (everything) and OUT/gpu_check.md (the table).
# Exits non-zero when a unit test or a run fails.
set -uo pipefail
bundle="$(cd "${1:?usage: scripts/gpu_check.sh BUNDLE OUT [WORK]}" && pwd)"
out="${2:?usage: scripts/gpu_check.sh BUNDLE OUT [WORK]}"
work="${3:-$PWD/gpu-check-work}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out" "$work"
exec > >(tee "$out/gpu_check.log") 2>&1
failed=0
step() { echo; echo "== $*"; }

step "machine"
date -u
uname -r
nproc
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader || true
df -T "$work" | tail -1

step "CUDA libraries"
find_lib() {
  find /usr /opt /lib /usr/local 2>/dev/null -name "$1" \( -type f -o -type l \) | sort | head -1
}
cudart="$(find_lib 'libcudart.so.1[0-9]')"
cufile="$(find_lib 'libcufile.so.0')"
echo "libcudart: ${cudart:-none}"
echo "libcufile: ${cufile:-none}"
libdirs="$bundle/deps"
[[ -n "$cudart" ]] && libdirs="$libdirs:$(dirname "$cudart")"
[[ -n "$cufile" ]] && libdirs="$libdirs:$(dirname "$cufile")"
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuFile writes its log beside the working directory unless told otherwise.
export CUFILE_LOGFILE_PATH="$out/cufile.log"

# cuFile's status codes, from its header where the wheel or toolkit ships it.
header="$(find /usr /opt 2>/dev/null -name cufile.h | head -1)"
if [[ -n "$header" ]]; then
  echo "cufile.h: $header"
  grep -o 'CUFILE_OP([^)]*)' "$header" | head -60
fi

step "unit tests on each data path"
cd "$work"
# The cases marked "(fake runtime)" or "(fakes)" load stand-in libraries from
# the build tree (machines without a GPU run them); the rest read real files
# into real device memory and compare the bytes copied back.
for mode in emulated cuda-bounce cufile; do
  echo "-- IOMIMIC_GDS_TEST_MODE=$mode"
  if IOMIMIC_GDS_TEST_MODE=$mode "$bundle/bin/iomimic_storage_gds_test" \
      --test-case-exclude='*(fake*'; then
    echo "unit tests $mode: passed"
  else
    echo "unit tests $mode: FAILED"
    failed=1
  fi
done

step "shrunk unet3d_h100 (npz, decode off)"
iomimic="$bundle/bin/iomimic"
common=("$repo/workloads/unet3d_h100.yaml"
  "++workload.dataset.data_folder=$work/data"
  "++workload.dataset.num_files_train=${GPU_CHECK_FILES:-56}"
  "++workload.workflow.checkpoint=False"
  "++workload.reader.decode=False"
  "++workload.train.epochs=${GPU_CHECK_EPOCHS:-3}")
"$iomimic" generate -q "${common[@]}" || failed=1
du -sh "$work/data"
runs=()
run() {  # NAME COMPUTE OVERRIDES...
  local name=$1 compute=$2
  shift 2
  local folder="$work/out-$name-c$compute"
  rm -rf "$folder"
  echo "-- $name, computation_time $compute"
  if "$iomimic" run -q "${common[@]}" "++workload.train.computation_time=$compute" \
      "++workload.output.folder=$folder" "$@"; then
    runs+=("$name:$compute:$folder")
  else
    echo "run $name FAILED"
    failed=1
  fi
}
for compute in 0 0.323; do
  run posix "$compute" ++workload.storage.backend=posix
  run gds-emulated "$compute" ++workload.storage.backend=gds ++workload.storage.options.mode=emulated
  run gds-cuda-bounce "$compute" ++workload.storage.backend=gds \
    ++workload.storage.options.mode=cuda-bounce ++workload.storage.options.report=true \
    "++workload.storage.options.cuda_runtime=$cudart"
  run gds-cuda-bounce-direct "$compute" ++workload.storage.backend=gds \
    ++workload.storage.options.mode=cuda-bounce ++workload.storage.options.direct=true \
    "++workload.storage.options.cuda_runtime=$cudart"
  run gds-cufile "$compute" ++workload.storage.backend=gds \
    ++workload.storage.options.mode=cufile ++workload.storage.options.report=true \
    "++workload.storage.options.cuda_runtime=$cudart" \
    "++workload.storage.options.cufile_library=$cufile"
  run gds-auto "$compute" ++workload.storage.backend=gds ++workload.storage.options.report=true
done

# cuFile registers a file only when udev describes its block device
# (ID_FS_USAGE); VMs and containers without udevd have no such record, and
# cuFile refuses every file even in compatibility mode. GPU_CHECK_UDEV=1 (on a
# throwaway machine only: it writes into /run/udev/data) supplies the record
# and runs the cufile case again.
if [[ "${GPU_CHECK_UDEV:-0}" == 1 ]]; then
  step "cufile with a udev record for the data's block device"
  dev=$(stat -c '%d' "$work/data")
  record="/run/udev/data/b$((dev >> 8)):$((dev & 255))"
  fstype=$(stat -f -c '%T' "$work/data")
  if [[ ! -e "$record" ]]; then
    mkdir -p /run/udev/data
    printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$fstype" > "$record"
    echo "wrote $record (ID_FS_USAGE=filesystem, ID_FS_TYPE=$fstype)"
  fi
  echo "-- IOMIMIC_GDS_TEST_MODE=cufile, with the record"
  if IOMIMIC_GDS_TEST_MODE=cufile "$bundle/bin/iomimic_storage_gds_test" \
      --test-case-exclude='*(fake*'; then
    echo "unit tests cufile with the udev record: passed"
  else
    echo "unit tests cufile with the udev record: FAILED"
    failed=1
  fi
  run gds-cufile-udev 0 ++workload.storage.backend=gds \
    ++workload.storage.options.mode=cufile ++workload.storage.options.report=true \
    "++workload.storage.options.cuda_runtime=$cudart" \
    "++workload.storage.options.cufile_library=$cufile"
fi

step "KV-cache accelerator tier in device memory (bench/kvcache_gpu_tier.py)"
# The whole layout's accelerator tier, then the chunked mode's gpu tier
# (docs/kvcache-chunked.md), the same way.
for layout in whole chunked; do
  suffix=$([[ $layout == chunked ]] && echo _chunked || true)
  kv_args=(--iomimic "$iomimic" --work "$work/kvcache$suffix" --layout "$layout"
           --markdown "$out/kvcache_gpu_tier$suffix.md")
  [[ -n "$cudart" ]] && kv_args+=(--cuda-runtime "$cudart")
  if python3 "$repo/bench/kvcache_gpu_tier.py" "${kv_args[@]}"; then
    echo "kvcache gpu tier ($layout): passed"
  else
    echo "kvcache gpu tier ($layout): FAILED"
    failed=1
  fi
done

step "table"
python3 - "$out/gpu_check.md" "${runs[@]}" <<'EOF'
import json, statistics, sys
# storage s and H2D s are summed over the reader threads (each thread's time
# in the step), so staged GiB / H2D s is a per-thread copy rate, not the link's.
rows = ["| run | computation_time | data_path | MiB/s (mean of epochs) | AU % | staged GiB | "
        "storage s | H2D s | GiB per H2D s | refused files |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
for spec in sys.argv[2:]:
    name, compute, folder = spec.split(":", 2)
    with open(folder + "/summary.json") as f:
        s = json.load(f)
    io = s["iomimic"]
    st = io.get("plugins", {}).get("storage", {})
    stats = st.get("statistics", {})
    staged = stats.get("gds_staged_bytes", 0) / 2**30
    h2d = stats.get("gds_h2d_seconds", 0)
    au = s["metric"]["train_au_mean_percentage"]
    rows.append("| %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %.3f | %s | %d |" % (
        name, compute, st.get("data_path", "?"),
        statistics.mean(io["train_io_actual_MiB_per_second"]), au, staged,
        stats.get("gds_storage_seconds", 0), h2d,
        "%.1f" % (staged / h2d) if h2d > 0 else "-",
        stats.get("gds_cufile_refused_files", 0)))
text = "\n".join(rows) + "\n"
print(text)
open(sys.argv[1], "w").write(text)
EOF
[[ $? -eq 0 ]] || failed=1
exit $failed
