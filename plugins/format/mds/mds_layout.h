// The layout of MDS shards (mosaicml/streaming's "mds" format, version 2) as
// the library's MDSWriter writes them, and of the index.json that lists them.
// docs/formats.md ("mds") says what is copied from the library.
//
// A shard (what MDSWriter calls a joint shard) is, all integers little-endian
// uint32:
//
//   num_samples
//   offsets[num_samples + 1]   absolute file offset of each sample, then the end
//   config                     json.dumps(config, sort_keys=True) of the writer's
//                              settings: column_encodings, column_names,
//                              column_sizes, compression, format ("mds"),
//                              hashes, size_limit, version (2)
//   samples                    each: a uint32 size per column of variable size
//                              (none here), then each column's encoded value
//
// iomimic writes one column, named by dataset.mds.column (default "x"),
// encoded "ndarray:<dtype>:<d1>,<d2>,...": the sample array's values in C
// order, a fixed size, so column_sizes holds that size and samples have no
// size header. Sample i's values are bytes [i * sample_bytes(), (i + 1) *
// sample_bytes()) of spec.PayloadContent(), as in the other formats.
//
// With compression zstd (FileSpec::compression "zstd", only where the build
// has libzstd) the file holds that shard compressed whole into one zstd frame
// (with its content size), as streaming's compress('zstd:<level>', data)
// makes it; the index then names it as zip_data and the decompressed shard
// the library's reader writes into its cache as raw_data.
//
// index.json: json.dump({"shards": [...], "version": 2}, sort_keys=True),
// each shard the config above plus "raw_data" and "zip_data" ({"basename",
// "bytes", "hashes": {}}, zip_data null when not compressed) and "samples".
// mosaicml/streaming keeps one index.json per dataset folder, written after
// every shard; iomimic writes each file on its own (several ranks and threads
// at once), so each shard gets its own dataset folder, as the partitions
// that streaming's merge_index joins: the shard <dir>/<name>.mds has the
// index <dir>/<name without .mds>/index.json, whose shard basename is
// "../<name>.mds" (resolved against the index's folder, as the library's
// reader joins it to its local folder).

#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"

namespace iomimic::mds {

// MDSWriter's default size_limit.
inline constexpr std::uint64_t kDefaultSizeLimit = std::uint64_t{1} << 26;
// Shard offsets are uint32: no shard reaches 4 GiB.
inline constexpr std::uint64_t kMaxShardBytes = (std::uint64_t{1} << 32) - 1;
// The index's name (streaming's get_index_basename()).
inline constexpr char kIndexName[] = "index.json";

struct MdsOptions {
  std::string column = "x";                       // the one column's name
  std::uint64_t size_limit = kDefaultSizeLimit;   // 0: none (null)
  std::size_t chunk_size = std::size_t{4} << 20;  // bytes per write request
};

// Whether this build writes and reads zstd shards.
bool HaveZstd();

// What a shard of a spec looks like.
struct ShardPlan {
  std::string encoding;  // "ndarray:uint8:24,20"
  std::uint64_t sample_bytes = 0;
  std::string compression;         // "" (null), "zstd" or "zstd:<level>"
  std::string config;              // the JSON text in the shard
  std::uint64_t header_bytes = 0;  // count, offsets and config
  std::uint64_t raw_bytes = 0;     // the uncompressed shard
};

// Checks that `spec` can be written as one MDS shard: a non-empty sample
// shape without zero dimensions, at least one sample, an element type of
// streaming's ndarray encoding (no bool), compression none or zstd (when
// built with it), a shard below 4 GiB, and at most size_limit bytes as
// MDSWriter counts them (the config, and each sample plus its 4-byte offset)
// for a shard of more than one sample: MDSWriter would have started a new
// shard. kInvalidArgument or kNotSupported with the reason.
Status ValidateSpec(const FileSpec& spec, const MdsOptions& options);

// The plan of `spec`'s shard, after ValidateSpec.
Result<ShardPlan> PlanShard(const FileSpec& spec, const MdsOptions& options);

// Where the index of the shard at `data_path` is (see the file comment).
std::string IndexPathFor(const std::string& data_path);
// The shard's basename as its index names it: "../<name>".
std::string ShardBasename(const std::string& data_path);
// The name the index gives the decompressed form of a zstd shard.
std::string RawBasename(const std::string& data_path);

// The text of the index of the one shard of `spec` (`zip_bytes`: the zstd
// file's size, when compressed).
std::string IndexText(const FileSpec& spec, const ShardPlan& plan, std::uint64_t zip_bytes);

// What a reader takes from index.json about one shard.
struct ShardInfo {
  std::string index_path;
  std::uint64_t samples = 0;
  std::uint64_t raw_bytes = 0;
  std::uint64_t zip_bytes = 0;  // the file's size when compressed
  bool compressed = false;      // zstd
  // Bytes before a sample's values: a uint32 size per variable-size column.
  std::uint64_t sample_head = 0;
  // The fixed size of a sample (head and values), 0 when a column's size varies.
  std::uint64_t sample_bytes = 0;
  // Whether a reader has compared the shard's own count with `samples`
  // (shared by the readers of the shard).
  std::shared_ptr<std::atomic<bool>> count_checked = std::make_shared<std::atomic<bool>>(false);
};

// Finds the shard at `data_path` in the index text `text` read from
// `index_path`. kCorruption naming the index (and the offset, for JSON that
// does not parse) for an index that is not streaming's version 2, that does
// not list the shard or whose entry is incomplete; kNotSupported for a
// compression other than zstd (or zstd in a build without it).
Result<ShardInfo> ParseIndexFor(std::string_view text, const std::string& index_path,
                                const std::string& data_path);

}  // namespace iomimic::mds
