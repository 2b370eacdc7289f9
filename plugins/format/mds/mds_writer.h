// Writing MDS shards and their index.json (mds_layout.h) as mosaicml/
// streaming's MDSWriter writes them: the shard through chunk-aligned
// File::WriteAt requests of MdsOptions::chunk_size bytes (memory stays at a
// chunk, and for zstd at the compressor's window), then the index written to
// a hidden temporary name in its folder and renamed into place, so a crash
// never leaves a partial index under the real name.

#pragma once

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "mds_layout.h"

namespace iomimic::mds {

// Writes the shard of `spec` into `file` (open for writing, empty) and its
// index at IndexPathFor(spec.path) through `storage`. Never throws.
Status WriteMdsShard(Storage& storage, File& file, const FileSpec& spec, const MdsOptions& options);

}  // namespace iomimic::mds
