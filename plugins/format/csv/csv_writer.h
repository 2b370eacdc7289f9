// Writing CSV files like DLIO's csv_generator (pandas DataFrame.to_csv):
// num_samples rows of sample_elements() comma-separated values, "\n" line
// ends, values as described in csv_values.h (one distinct row per sample).
// Content options (FileSpec::content): kind kZeros makes every value 0 ("0",
// "0.0", "False"); the compress and dedupe percentages, which describe bytes,
// do not apply to text.
//
// Layout: by default rows only (no header line, no index column). With
// WriterOptions::pandas_header the file has pandas' default layout, which is
// what DLIO's generator really produces (it calls to_csv without
// header=False/index=False): a header line ",0,1,...,n-1" and the row index
// as the first field of every row.
//
// Compression (FileSpec::compression): none, gzip, bz2, xz or zip, written
// into the given file (named <...>.csv by the core; DLIO appends .gz, .bz2,
// .xz or .zip to the name instead). Levels come from
// FileSpec::compression_level, clamped to each codec's range. zip holds one
// deflated member named like the file. Memory stays at one text buffer and
// one or two write chunks; all writes are File::WriteAt at chunk-aligned
// offsets (zip's first chunk is written last, once its local header is
// patched).

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "zip/zip_records.h"

namespace iomimic::csv {

struct WriterOptions {
  // Bytes per write request (rounded up to the storage alignment).
  std::size_t chunk_size = std::size_t{4} << 20;
  // pandas' default to_csv layout: header line and index column.
  bool pandas_header = false;
  // zipfile's ZIP64 limit (zip/zip_records.h): a member that may grow past
  // it gets a ZIP64 local header, and values past it go to ZIP64 fields.
  // Tests lower it to reach those paths with small files.
  std::uint64_t zip64_limit = zip::kZip64Limit;
};

// The generator seed of row `row` of the file written for `spec`.
inline std::uint64_t RowSeed(const FileSpec& spec, std::uint64_t row) {
  return MixSeed(spec.seed, row);
}

// Checks that `spec` can be written: a non-empty sample shape without zero
// dimensions, at least one sample, an element type with a CSV form (bool,
// integers, float16/32/64), a supported compression.
Status ValidateSpec(const FileSpec& spec);

// Writes the file for `spec` into `file` (open for writing, empty) through
// File::WriteAt only. Never throws.
Status WriteCsvFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options);

}  // namespace iomimic::csv
