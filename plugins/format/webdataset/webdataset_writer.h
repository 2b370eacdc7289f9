// Writing WebDataset shards: POSIX tar files as webdataset's TarWriter
// writes them through Python's tarfile (tar_header.h). Sample i of a file is
// two members under the key K = the sample's number in the dataset
// (file_index * num_samples + i) as at least nine decimal digits, in the
// order TarWriter writes a sample's fields (sorted by extension):
//
//   K.cls  the class label as decimal text (label_classes classes)
//   K.npy  the sample as a .npy file numpy loads: numpy's header
//          (iomimic/npy.h) for the spec's shape and element type, then the
//          sample's bytes
//
// then the two zero blocks that end the archive, and zeros up to a multiple
// of tarfile's record size (10240 bytes). Every header has the same mtime
// (kMemberMtime), so the same spec gives the same bytes.
//
// Content: the .npy data of sample i are bytes [i * sample_bytes(), (i + 1) *
// sample_bytes()) of spec.PayloadContent(), as in the other formats; the label
// of sample i is MixSeed(spec.seed, i) mod label_classes.
//
// All writes go through File::WriteAt in chunk-aligned requests of
// WriterOptions::chunk_size bytes; memory stays at one chunk.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::webdataset {

// The mtime every member header carries (2023-11-14T22:13:20Z).
inline constexpr std::uint64_t kMemberMtime = 1700000000;
// The payload and label members' extensions.
inline constexpr char kPayloadExtension[] = "npy";
inline constexpr char kLabelExtension[] = "cls";

struct WriterOptions {
  // Bytes per write request (rounded up to the storage alignment).
  std::size_t chunk_size = std::size_t{4} << 20;
  // Labels are 0 .. label_classes - 1 (ImageNet's 1000 by default).
  std::uint64_t label_classes = 1000;
};

// Byte layout of a shard of `spec`.
struct ShardLayout {
  std::uint64_t npy_header = 0;  // numpy's header in front of each sample
  std::uint64_t npy_member = 0;  // npy_header + sample bytes
  std::uint64_t stride = 0;      // bytes of one sample: two headers and two padded members
  std::uint64_t archive = 0;     // samples and the end-of-archive blocks
  std::uint64_t file_size = 0;   // archive padded to the record size
};

// Checks that `spec` can be written: a non-empty sample shape without zero
// dimensions, at least one sample, compression "none" (kNotSupported
// otherwise: webdataset's .tar.gz shards are not emulated), members below
// 8 GiB and a file size that fits in 63 bits.
Status ValidateSpec(const FileSpec& spec);

// The layout of `spec`'s shard, after ValidateSpec.
Result<ShardLayout> ComputeLayout(const FileSpec& spec);

// The key of sample `sample` of `spec`'s file (see the file comment).
std::string SampleKey(const FileSpec& spec, std::uint64_t sample);

// Writes the shard of `spec` into `file` (open for writing, empty) through
// chunked WriteAt requests. Never throws.
Status WriteShard(Storage& storage, File& file, const FileSpec& spec, const WriterOptions& options);

}  // namespace iomimic::webdataset
