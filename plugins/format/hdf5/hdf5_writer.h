// Writing HDF5 files the way DLIO's hdf5_generator does with h5py:
//
//   f = h5py.File(path, 'w', libver='latest')
//   for k in range(K): f.create_dataset(f'records_{k}', shape, dtype=...,
//                                       data=records, chunks=..., maxshape=...,
//                                       compression=..., compression_opts=...)
//   f.create_dataset('labels', data=[0] * num_samples)
//   f.close()
//
// (see hdf5_layout.h for shapes, chunking and filters). Every byte goes
// through the iomimic virtual file driver into the File handed to
// WriteHdf5File. The datasets are created and filled in DLIO's order, so the
// objects land where h5py puts them: the superblock (version 3), the root
// group and dataset object headers in the first 2 KiB metadata block, then
// records_0's data, records_1's data, ..., labels' data.
//
// Content: every records dataset holds the byte stream of
// iomimic::ContentStream(spec.seed, spec.content) in C order (row i is bytes
// [i * row_bytes, (i + 1) * row_bytes) of the stream), however it is split
// into blocks; bool datasets keep only the lowest
// bit of each byte. DLIO writes the same array into each of the K datasets,
// and so does this writer.
//
// Memory stays bounded: data are generated and written in blocks of about
// WriterOptions::block_size bytes (one H5Dwrite each). Contiguous datasets
// are walked in C order with blocks that may split a sample, so even a single
// huge sample is written piecewise. Chunked datasets are written in blocks
// of whole samples whose count is a multiple of the chunk's first dimension,
// so every chunk is complete after a single H5Dwrite (HDF5 never has to read
// a compressed chunk back and rewrite it); such a block is at least
// chunk_dims[0] samples.

#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hdf5_layout.h"
#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::hdf5 {

struct WriterOptions {
  // Target size of one generated block (one H5Dwrite).
  std::size_t block_size = std::size_t{4} << 20;
};

// Walks a dataset in C order in blocks of consecutive elements, each a
// hyperslab: single indices along the axes before a split axis, a range along
// it and everything along the axes after it.
class BlockWalker {
 public:
  // `budget` is the target block size in bytes. With `row_multiple` > 0 the
  // split axis is 0 and every block but the last holds a multiple of
  // `row_multiple` samples (at least that many, whatever the budget).
  BlockWalker(std::span<const hsize_t> dims, std::uint64_t element_size, std::uint64_t budget,
              hsize_t row_multiple = 0);

  // The next block; false when the dataset is done.
  bool Next(std::vector<hsize_t>* start, std::vector<hsize_t>* count);

  // Bytes of the largest block.
  std::uint64_t max_block_bytes() const { return max_block_bytes_; }
  std::size_t split_axis() const { return axis_; }

 private:
  std::vector<hsize_t> dims_;
  std::vector<hsize_t> index_;  // position along the axes up to the split axis
  std::size_t axis_ = 0;
  hsize_t step_ = 1;  // elements along the split axis per block
  std::uint64_t max_block_bytes_ = 0;
  bool done_ = false;
};

// Writes the HDF5 file for `spec` into `file` (open for writing, empty).
// Storage failures keep their status code; other HDF5 failures are
// kInternal. Never throws.
Status WriteHdf5File(Storage& storage, File& file, const FileSpec& spec,
                     const WriterOptions& options);

// Writing in parts (shared-file generation), for files with one contiguous,
// uncompressed records dataset (kNotSupported with the reason otherwise):
// WriteHdf5File allocates contiguous records at creation
// (H5D_ALLOC_TIME_EARLY, no fill value written), and WriteHdf5Frame writes
// the same file but leaves records_0's data unwritten: they are the payload,
// the bytes of ContentStream(spec.seed, spec.content) in C order from the returned
// payload_offset. Frame plus payload are byte for byte WriteHdf5File's file
// but for the root group's times (as for any two writes of one spec).
Status CanWriteHdf5InParts(const FileSpec& spec);
Result<PayloadLayout> WriteHdf5Frame(Storage& storage, File& file, const FileSpec& spec,
                                     const WriterOptions& options);

}  // namespace iomimic::hdf5
