// The layout of a generated HDF5 file, derived from a FileSpec the way DLIO's
// hdf5_generator derives it for h5py:
//
//   records_0 .. records_{K-1}   K = hdf5.num_dset_per_record (default 1),
//       shape (num_samples, *row_dims), dtype spec.element_type, all K with
//       the same content;
//   labels                       shape (num_samples,), int64 zeros,
//                                contiguous, no filters.
//
// Row dims: spec.sample_shape with its first dimension divided by K (K must
// divide it, as DLIO's config validation demands), then a leading 1 dropped
// (DLIO drops it from record_dims: [1, 64, 64] gives rows of (64, 64)). The
// spec does not say whether the shape came from record_dims or from
// record_length_bytes; DLIO drops the 1 only for record_dims, so a drawn
// (1, d) shape, which needs record_length_bytes < 4, differs from DLIO.
//
// Storage layout, as h5py's create_dataset decides it:
//   - hdf5.chunk_dims given: chunked with those dims. DLIO hands them to h5py
//     unchanged, so they must have the dataset's rank; this plugin also
//     accepts them without the sample axis and then uses a chunk extent of 1
//     along it (one sample per chunk row), e.g. chunk_dims "32,32" on rows of
//     (64, 64) gives chunks (1, 32, 32).
//   - no chunk_dims, but compression or hdf5.max_shape: chunked with
//     GuessChunk(), h5py's guess_chunk (same algorithm and constants).
//   - otherwise contiguous.
//   hdf5.max_shape gives maxshape (num_samples, *max_shape); 0 (YAML null)
//   is unlimited. Chunk dims must not exceed the dataset's (maximum) shape.
//   Chunked datasets get fill time "alloc" as h5py sets it; object times
//   are not tracked (h5py's default track_times=False).
//
// Compression: "none"; "gzip" (deflate filter, level spec.compression_level
// 0-9); "lzf" (filter 32000, optional flag, as h5py sets it) only when the
// HDF5 library can load that filter, which Debian's libhdf5 cannot (h5py
// ships its own copy inside its module); anything else is kNotSupported, as
// h5py raises for DLIO's bz2/zip/xz names.
//
// Element types map to what h5py creates for the NumPy dtype: little-endian
// standard integer and IEEE float types, float16 as h5py's custom 16-bit IEEE
// type, bool as h5py's enum {FALSE = 0, TRUE = 1} over int8.

#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hdf5_support.h"
#include "iomimic/format.h"
#include "iomimic/status.h"

namespace iomimic::hdf5 {

inline constexpr char kRecordsPrefix[] = "records_";
inline constexpr char kLabelsName[] = "labels";
inline constexpr char kChunkDimsKey[] = "hdf5.chunk_dims";
inline constexpr char kMaxShapeKey[] = "hdf5.max_shape";
inline constexpr char kNumDatasetsKey[] = "hdf5.num_dset_per_record";
// The LZF filter id h5py registers.
inline constexpr H5Z_filter_t kLzfFilter = 32000;
// Largest K accepted (HDF5 has no limit; this keeps mistakes cheap).
inline constexpr std::uint64_t kMaxDatasetsPerRecord = 4096;
// HDF5 refuses chunks of 4 GiB or more.
inline constexpr std::uint64_t kMaxChunkBytes = (std::uint64_t{1} << 32) - 1;

// Name of the k-th records dataset, "records_<k>".
std::string RecordsName(std::uint64_t k);

enum class Compression { kNone, kGzip, kLzf };

// Everything needed to create the datasets of one file.
struct FileLayout {
  std::uint64_t num_datasets = 1;   // K
  std::vector<hsize_t> dims;        // (num_samples, *row_dims)
  std::vector<hsize_t> max_dims;    // empty: same as dims; H5S_UNLIMITED allowed
  std::vector<hsize_t> chunk_dims;  // empty: contiguous
  bool chunks_guessed = false;      // chunk_dims came from GuessChunk
  Compression compression = Compression::kNone;
  int gzip_level = 4;
  ElementType element_type;
  std::uint64_t num_samples = 0;
  std::uint64_t row_elements = 1;  // product of the row dims
  std::uint64_t row_bytes = 0;     // row_elements * element size

  std::size_t rank() const { return dims.size(); }
  bool chunked() const { return !chunk_dims.empty(); }
};

// Checks `spec` and derives the layout. kInvalidArgument for shapes, keys or
// levels that h5py (or DLIO's validation) would refuse, kNotSupported for a
// compression this library cannot write. Messages start with "hdf5: ".
Result<FileLayout> PlanLayout(const FileSpec& spec);

// h5py's guess_chunk(shape, maxshape, typesize): halves the axes in turn
// until the chunk is near a target size that grows with the dataset (8 KiB to
// 1 MiB). Zero dimensions count as 1024. Returns a chunk shape of the same
// rank (empty for an empty shape).
std::vector<hsize_t> GuessChunk(std::span<const hsize_t> shape, std::size_t type_size);

// Parses "a,b,c" (spaces and surrounding brackets allowed) into numbers.
// kInvalidArgument naming `key` otherwise.
Result<std::vector<std::uint64_t>> ParseDimList(const std::string& key, const std::string& text);

// True when HDF5 can apply the LZF filter (registered or loadable as a
// plugin).
bool LzfAvailable();

// The HDF5 datatype h5py uses for `type` (a new, owned type).
Result<Handle> CreateElementType(const ElementType& type);

}  // namespace iomimic::hdf5
