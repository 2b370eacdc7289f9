// Writing .npy files the way DLIO's npy_generator does: np.save(path, x).
//
// x is the array DLIO's npz generator stores as "x": shape
// (*sample_shape, num_samples) (the sample index on the last axis), C order,
// dtype spec.element_type.descr. The file is an NPY v1.0 header exactly as
// numpy 1.24's np.save writes it (magic, version, little-endian header length,
// the dict padded with spaces and '\n' so the data start on a 64-byte
// boundary; version 2.0 only when the dict exceeds 65535 bytes) followed by
// the raw array bytes.
//
// The content of x is the byte stream of spec.PayloadContent() (seed and
// content options), however the writer splits it (bool arrays keep only the
// lowest bit of each byte, so they hold 0 and 1). Large files stream through
// one chunk buffer written at chunk-aligned offsets.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::npy {

struct WriterOptions {
  // Bytes per write request (at least 64 KiB, rounded up to the storage
  // alignment).
  std::size_t chunk_size = std::size_t{4} << 20;
};

// Checks that `spec` can be written: a non-empty sample shape with no zero
// dimension, at least one sample, a known element type whose descr matches
// its size, compression none (np.save does not compress) and sizes that fit
// in 64 bits.
Status ValidateSpec(const FileSpec& spec);

// The NPY header (preamble, length, dict, padding) for `spec`.
Result<std::string> EncodeHeader(const FileSpec& spec);

// The exact size WriteNpyFile produces: header plus sample_bytes * num_samples.
Result<std::uint64_t> ComputeFileSize(const FileSpec& spec);

// Writes the file for `spec` into `file` (open for writing, empty) through
// File::WriteAt only, with a chunk buffer from `storage`. Never throws.
Status WriteNpyFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options);

}  // namespace iomimic::npy
