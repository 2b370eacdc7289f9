// Writing .npz files the way np.savez(file, x=x, y=y) lays them out.
//
// The archive holds two members in this order:
//   x.npy: the samples, shape (*sample_shape, num_samples) (DLIO puts the
//          sample index on the last axis), C order, dtype from the spec;
//   y.npy: int64 zeros of shape (num_samples,), the labels.
// Members are stored (np.savez) or deflated (np.savez_compressed, when the
// spec's compression is "zip"), and every byte matches what numpy 1.24 with
// CPython 3.11's zipfile writes for the same arrays. Deflate uses zlib's
// default level, as np.savez_compressed does; spec.compression_level is not
// used (DLIO's npz generator ignores it too).
//
// The content of x is the byte stream of spec.PayloadContent() (seed and
// content options; bool arrays take the lowest bit of each byte, so they hold
// only 0 and 1).
// Large files stream through two chunk buffers: the first chunk of the file
// is held back until the end so the x local header, whose CRC and sizes are
// known only after the data, is patched in memory and every write lands at a
// chunk-aligned offset.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "zip/zip_records.h"

namespace iomimic::npz {

inline constexpr char kSamplesMember[] = "x.npy";
inline constexpr char kLabelsMember[] = "y.npy";
inline constexpr char kLabelsDescr[] = "<i8";

struct WriterOptions {
  // Sizes and offsets above this get ZIP64 records. zipfile's limit; tests
  // set 0 to exercise the ZIP64 paths with small files.
  std::uint64_t zip64_limit = zip::kZip64Limit;
  // Bytes per write request (rounded up to the storage alignment).
  std::size_t chunk_size = std::size_t{4} << 20;
};

// Checks that `spec` can be written: a non-empty sample shape with no zero
// dimension, at least one sample, a known element type, compression none or
// zip, and sizes that fit in 64 bits.
Status ValidateSpec(const FileSpec& spec);

// The exact size WriteNpzFile produces for an uncompressed spec;
// kNotSupported for compressed ones.
Result<std::uint64_t> ComputeFileSize(const FileSpec& spec, const WriterOptions& options);

// Writes the archive for `spec` into `file` (open for writing, empty) through
// File::WriteAt only, with chunk buffers from `storage`. Never throws.
Status WriteNpzFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options);

}  // namespace iomimic::npz
