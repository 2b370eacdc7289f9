// The descriptor of the indexed_binary plugin (DLIO's IndexedBinaryReader:
// index files loaded once, then one seek + readinto per sample).

#include "indexed_binary/indexed_binary_format.h"
#include "iomimic/plugin.h"

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "indexed_binary", "1.0.0",
    "DLIO indexed binary: fixed-size samples concatenated in a data file with .off.idx/.sz.idx "
    "uint64 index files; one ranged read per sample like DLIO's IndexedBinaryReader",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_PARTIAL_READS, iomimic::indexed_binary::kPluginOptions,
    [](const iomimic::PluginContext& context) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      return iomimic::indexed_binary::CreateIndexedBinaryFormat(
          iomimic::indexed_binary::Flavor::kIndexedBinary, context);
    });
