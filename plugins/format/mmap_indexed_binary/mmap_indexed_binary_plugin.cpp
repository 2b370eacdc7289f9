// The descriptor of the mmap_indexed_binary plugin: DLIO's
// IndexedBinaryMMapReader, which np.memmap's the data and index files and
// slices samples out of the map.
//
// The files are those of indexed_binary (DLIO's generator is the same; only
// the extension differs, since DLIO names files by format) and so is the
// implementation: the indexed_binary sources are compiled into this plugin
// with Flavor::kMmapIndexedBinary. Through the storage seam a sample is the
// same ranged read of its bytes. The access pattern that really differs in
// DLIO, page-fault driven I/O through a memory map (4 KiB pages, kernel
// readahead, no explicit read calls), belongs to the storage layer: run this
// format on the `mmap` storage back end to reproduce it. Note that DLIO's
// mmap reader only slices the map and never touches the sample's bytes, so
// DLIO itself may read almost nothing; iomimic reads the bytes a training step
// would consume.

#include "indexed_binary/indexed_binary_format.h"
#include "iomimic/plugin.h"

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "mmap_indexed_binary", "1.0.0",
    "DLIO indexed binary read through np.memmap (same files as indexed_binary); one ranged read "
    "per sample here, page-fault driven I/O when run on the mmap storage back end",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_PARTIAL_READS, iomimic::indexed_binary::kPluginOptions,
    [](const iomimic::PluginContext& context) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      return iomimic::indexed_binary::CreateIndexedBinaryFormat(
          iomimic::indexed_binary::Flavor::kMmapIndexedBinary, context);
    });
