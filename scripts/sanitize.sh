#!/usr/bin/env bash
# Builds iomimic with clang and sanitizers into build-<kind>/ and runs the
# unit, format, storage, conformance, format-corruption, hostile-input and
# fault-matrix tests under them (docs/security.md).
#
#   scripts/sanitize.sh [asan|tsan] [extra ctest arguments...]
#
# asan: AddressSanitizer + UndefinedBehaviorSanitizer (every UB report is an
#       error). tsan: ThreadSanitizer. Reports from Open MPI and hwloc
#       themselves are suppressed (scripts/sanitizers/*.supp); the project's
#       own code gets none. Jobs: IOMIMIC_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-asan}"
shift || true
jobs="${IOMIMIC_JOBS:-2}"
cc="${CC:-clang}"
cxx="${CXX:-clang++}"
command -v "$cxx" >/dev/null || { echo "sanitize.sh: $cxx not found (apt-get install clang)" >&2; exit 2; }
supp="$PWD/scripts/sanitizers"
case "$kind" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    # Keep Open MPI's components loaded, so leaks inside them are named by
    # their libraries (and suppressed) instead of "<unknown module>".
    export OMPI_MCA_mca_base_component_disable_dlclose=1
    export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
    ;;
  tsan)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
    ;;
  *)
    echo "usage: scripts/sanitize.sh [asan|tsan] [ctest arguments...]" >&2
    exit 2
    ;;
esac
build="build-$kind"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CC="$cc" CXX="$cxx" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  -DCMAKE_MODULE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$build" -j "$jobs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$build"
ctest -j "$jobs" --output-on-failure \
  -R '^(unit|format|storage|conformance)\.|integration\.(format_corruption|hostile_|fault_matrix_)' "$@"
