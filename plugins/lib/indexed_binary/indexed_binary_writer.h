// Writing indexed-binary datasets the way DLIO's indexed_binary_generator
// lays them out (see indexed_binary_common.h for the three files).
//
// The data file holds num_samples samples of spec.sample_bytes() bytes, the
// byte stream of spec.PayloadContent() (seed and content options; bool element
// types keep only the lowest bit of each byte). The index files hold offset i * sample_bytes
// and size sample_bytes for every sample i, as little-endian uint64.
//
// Generation streams through one buffer of generation_buffer_size bytes
// (FileSpec::parameters["generation_buffer_size"], DLIO's key, default 2 GiB)
// capped at WriterOptions::max_buffer_size (64 MiB) and at the largest file,
// and never below 4 KiB. Chunks are cut by bytes, not samples, so a sample may
// straddle two chunks; offsets in the index are global (DLIO restarts them at
// 0 for every chunk, a bug for files larger than its buffer, and loops
// forever when a sample is larger than the buffer; neither is reproduced).
//
// The index files are written through the same storage as the data file, each
// under a temporary name (PartialPath) that is renamed into place once it is
// complete, after the data (the core renames the data file itself when
// WriteFile returns OK). So a data file under its final name always has its
// index files beside it.

#pragma once

#include <cstdint>
#include <string>

#include "indexed_binary_common.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::indexed_binary {

// DLIO's default generation_buffer_size.
inline constexpr std::uint64_t kDefaultGenerationBufferSize = std::uint64_t{2} << 30;
// The generation buffer is never smaller than this.
inline constexpr std::uint64_t kMinGenerationBufferSize = std::uint64_t{4} << 10;

struct WriterOptions {
  // Upper bound of the generation buffer.
  std::uint64_t max_buffer_size = std::uint64_t{64} << 20;
};

// The buffer size generation uses for `spec` (before rounding to the storage
// alignment): generation_buffer_size clamped to [4 KiB, max_buffer_size].
// kInvalidArgument when the parameter is not a positive integer.
Result<std::uint64_t> GenerationBufferSize(const FileSpec& spec, const WriterOptions& options);

// Checks that `spec` can be written: samples of at least one byte, at least
// one sample, compression none (DLIO writes raw bytes), a valid
// generation_buffer_size and sizes that fit in 64 bits.
Status ValidateSpec(const FileSpec& spec, Flavor flavor);

// The exact size of the data file: sample_bytes * num_samples. (The index
// files hold 8 * num_samples bytes each.)
Result<std::uint64_t> ComputeFileSize(const FileSpec& spec, Flavor flavor);

// Writes the data into `file` (open for writing, empty) through File::WriteAt,
// then the two index files of spec.path through `storage`. spec.path must be
// the data file's final path: the index file names derive from it. Never
// throws. On failure no temporary file is left, and no index file either
// (the offsets index is removed again when the sizes index fails).
Status WriteIndexedBinaryFile(Storage& storage, File& file, const FileSpec& spec, Flavor flavor,
                              const WriterOptions& options);

// Writing in parts (shared-file generation): the data file is nothing but
// payload (sample i at i * sample_bytes, bytes of spec.PayloadContent()),
// so its frame is the two index files alone, written like WriteIndexedBinaryFile
// writes them. Same failure guarantees.
Status WriteIndexedBinaryFrame(Storage& storage, const FileSpec& spec, Flavor flavor,
                               const WriterOptions& options);

}  // namespace iomimic::indexed_binary
