// Reading samples from .npy files the way DLIO's NPYReader does:
// np.load(path) materialises the whole array, then x[..., i] is the sample.
//
// One "load" issues the storage requests numpy 1.24's np.load makes on a
// local file:
//   1. 4 KiB at offset 0: Python's BufferedReader fills its buffer when
//      np.load reads the 6-byte magic; the version, the header length and
//      the header dict are then parsed from that buffer (a dict that does
//      not fit in the first 4 KiB is read with one more request);
//   2. the whole array data, from the end of the header to the end of the
//      array, in ONE request (np.fromfile(fp, count=...) reads the array
//      with a single fread into the array's memory). With a non-zero
//      ReaderOptions::transfer_size the data are read in requests of that
//      size instead, ending on multiples of it in the file (the first one
//      is short by the header), as numpy's chunked reads do.
// The data land in a buffer from storage.Allocate(): the whole array in
// host memory when decoding; without decoding one request's worth, reused
// for every request (nothing looks at the bytes), wherever the back end
// places it, device memory included. With read_type on_demand every ReadSample performs a whole
// load (open, the requests above, close); with keep_in_memory the first load is kept for the
// reader's life. OpenReader performs step 1 of the first load, so that num_samples() is known, and
// the first ReadSample finishes it.
//
// When decoding, sample i is gathered from the last axis into C order (C and
// Fortran order files are both understood); with keep_in_memory the kept
// array is reordered once so that every sample is contiguous. Without
// decoding the same requests are made and only the sample size is returned.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "npy_header/npy_array.h"
#include "npy_header/npy_header.h"

namespace iomimic::npy {

// Size of np.load's first buffered read (the BufferedReader's st_blksize).
inline constexpr std::size_t kProbeSize = 4096;

class NpyReader final : public FileReader {
 public:
  // Opens `path` on options.storage and reads the header of the first load.
  // kInvalidArgument without a storage; the storage's error (kNotFound...)
  // when the file cannot be opened; kCorruption for a file that is not NPY.
  // Never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options);

  ~NpyReader() override;

  // The length of the last axis.
  std::uint64_t num_samples() const override { return layout_.num_samples; }

  // Sample `index` as x[..., index] in C order (decode) or just its size
  // (no decode). kOutOfRange for index >= num_samples(); kCorruption with
  // path and offset when the file is truncated or its header changed.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // The header of the first load.
  const numpy::NpyHeader& header() const { return header_; }
  std::uint64_t sample_bytes() const { return layout_.sample_bytes; }
  // Loads performed so far (whole-array reads), for tests.
  std::uint64_t loads() const { return loads_; }

 private:
  NpyReader(std::string path, const ReaderOptions& options);

  Status Init();
  // Step 1 of a load: opens the file and parses its header into
  // load_header_; leaves file_ open.
  Status BeginLoad();
  // Step 2: reads the array data into payload_, closes file_.
  Status FinishLoad();
  // With keep_in_memory and decoding: reorders a C-order payload so that
  // every sample is contiguous (one tiled transpose instead of a strided
  // gather per sample).
  Status MakeSampleMajor();
  Status ParseHeader(std::uint64_t file_size, numpy::NpyHeader* header);
  Status ReadExact(std::uint64_t offset, std::span<std::byte> out, const char* what);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;
  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  Result<SampleView> Gather(std::uint64_t index);
  void AbortLoad();

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = 0;  // 0: the whole array in one request

  std::unique_ptr<File> file_;
  bool header_ready_ = false;  // BeginLoad done, FinishLoad pending
  bool loaded_ = false;        // a complete load is in memory
  std::uint64_t loads_ = 0;

  numpy::NpyHeader header_;       // from the first load
  numpy::NpyHeader load_header_;  // from the current load
  std::uint64_t data_bytes_ = 0;
  numpy::SampleLayout layout_;  // of header_

  Buffer probe_;    // kProbeSize bytes
  Buffer payload_;  // the array data (decode), else one request's worth; grows when needed
  bool sample_major_ = false;  // payload_ holds sample after sample
  Buffer sample_;              // gathered sample; grows when needed
};

}  // namespace iomimic::npy
