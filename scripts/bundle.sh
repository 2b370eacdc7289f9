#!/usr/bin/env bash
# Copies a build into a self-contained folder that runs on another x86-64
# Linux machine without Debian's development packages: bin/ (iomimic and the
# given test programs), lib/iomimic/plugins/ and deps/ (every shared library
# they load that is not part of the C/C++ runtime, which the target supplies).
# Run it with LD_LIBRARY_PATH=DEST/deps. scripts/gpu_check.sh uses it on a
# GPU machine (plugins/storage/gds/README.md).
#
#   scripts/bundle.sh BUILD_DIR DEST [EXTRA_PROGRAM...]
set -euo pipefail
build="${1:?usage: scripts/bundle.sh BUILD_DIR DEST [EXTRA_PROGRAM...]}"
dest="${2:?usage: scripts/bundle.sh BUILD_DIR DEST [EXTRA_PROGRAM...]}"
shift 2
[[ -x "$build/bin/iomimic" ]] || { echo "bundle.sh: $build/bin/iomimic not found" >&2; exit 1; }
if [[ -e "$dest" && -n "$(ls -A "$dest" 2>/dev/null)" && ! -e "$dest/.iomimic-bundle" ]]; then
  echo "bundle.sh: $dest exists and is not a bundle; refusing to overwrite it" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/iomimic/plugins" "$dest/deps"
touch "$dest/.iomimic-bundle"
programs=("$build/bin/iomimic")
for p in "$@"; do programs+=("$build/bin/$p"); done
cp "${programs[@]}" "$dest/bin/"
cp "$build"/lib/iomimic/plugins/*.so "$dest/lib/iomimic/plugins/"
# The C and C++ runtimes come from the target: a newer libstdc++ there serves
# our binaries, an older one carried along could break the target's own
# libraries (libcudart, libcufile) loaded into the same process.
runtime='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libnsl|libutil|libanl|libstdc\+\+|libgcc_s)\.'
for f in "$dest"/bin/* "$dest"/lib/iomimic/plugins/*.so; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $runtime ]] && continue
  cp -L "$path" "$dest/deps/$name"
done
# Open MPI loads its components at run time; a lone run never initialises MPI
# (core/src/cluster/cluster.cpp), so the library alone is enough there.
strip --strip-debug "$dest"/bin/* "$dest"/lib/iomimic/plugins/*.so "$dest"/deps/*.so* 2>/dev/null || true
du -sh "$dest"
