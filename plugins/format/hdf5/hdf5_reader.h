// Reading samples from HDF5 files the way DLIO's HDF5Reader does with h5py:
//
//   open:        f = h5py.File(path, 'r')
//   get_sample:  for k in range(K): f[f'records_{k}'][index]
//   close:       f.close()
//
// Opening the file (H5Fopen) reads the superblock and the root group's object
// header; opening each records dataset reads its object header; reading
// sample `index` selects the hyperslab of that one row and reads it with
// H5Dread, a partial read: for a contiguous dataset HDF5 asks for exactly
// row_bytes at data_offset + index * row_bytes when a row is larger than its
// 64 KiB sieve buffer, otherwise for min(64 KiB, rest of the dataset) from
// the row's start (h5py gets the same); for a chunked dataset it reads the
// chunks holding the row (decompressed by HDF5's filters). All of it goes through
// the iomimic virtual file driver (hdf5_vfd.h), i.e. through the storage
// plugin in ReaderOptions::storage, with the same requests sec2 would make
// for h5py (for DLIO's resnet-like file: 8 B at 0, 16 B at 0, 32 B at 16,
// 512 B at 48, 512 B at 195, then the row). The labels dataset is never read,
// as in DLIO.
//
// K is found from the file: records_0, records_1, ... up to the first name
// that does not exist. A sample is the K rows one after another (K *
// row_bytes bytes).
//
// read_type on_demand (keep_in_memory false): every ReadSample is one whole
// open-read-close span. OpenReader performs the open (so num_samples() is
// known) and the first ReadSample reads and closes; later ReadSample calls
// reopen the file (and check that its datasets did not change).
// read_type memory (keep_in_memory true): the HDF5 file stays open from
// OpenReader until the reader is destroyed, and each sample is read from it
// as DLIO's kept-open h5py.File does. HDF5's metadata cache then spares the
// metadata reads; the datasets, as with h5py's f['records_<k>'][i], are
// opened for each sample and closed after it, so HDF5's per-dataset sieve
// buffer and chunk cache do not carry over between samples (rows are not
// cached by the plugin either).
//
// decode: true returns the rows; false performs the same HDF5 calls (HDF5
// must parse its metadata and apply its filters either way) and returns only
// the size. Content is never verified here; the unit tests do that.
// ReaderOptions::transfer_size is not used: HDF5 sizes its own requests.
//
// Errors: a storage failure keeps its status code, with the message
// "<path>: read of N bytes at offset X failed: <storage message>". A file
// HDF5 cannot parse (bad or missing signature, truncation, bad checksum,
// broken compressed chunk, missing records_0) is kCorruption with the path
// and an offset: the file size for a truncated file, 0 for a missing
// signature, the object header address for a missing or malformed dataset,
// otherwise the offset of the last request HDF5 made before it gave up. A
// filter the library cannot load (e.g. LZF) is kNotSupported.

#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hdf5_support.h"
#include "hdf5_vfd.h"
#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::hdf5 {

class Hdf5Reader final : public FileReader {
 public:
  // Opens `path` on options.storage and opens its records datasets. Never
  // throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options);

  ~Hdf5Reader() override;

  std::uint64_t num_samples() const override { return num_samples_; }

  // The K rows of sample `index` (decode) or just their size (no decode).
  // kOutOfRange for index >= num_samples().
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For collective reads: the K rows of sample `index` as byte ranges of
  // data_file(), when every records dataset is contiguous (HDF5 stores rows
  // of a contiguous dataset back to back from H5Dget_offset); kNotSupported
  // for chunked or compressed datasets. Leaves the file open.
  Result<std::vector<ByteRange>> SampleRanges(std::uint64_t index) override;
  File* data_file() override { return file_.get(); }

  // Number of records datasets (K).
  std::uint64_t num_datasets() const { return shapes_.size(); }
  // K * row_bytes.
  std::uint64_t sample_bytes() const { return sample_bytes_; }
  // Shape of records_k as found at the first open.
  const std::vector<hsize_t>& dims(std::size_t k) const { return shapes_[k].dims; }
  // H5Fopen calls so far.
  std::uint64_t opens() const { return opens_; }
  // Whether the HDF5 file is open now.
  bool is_open() const { return file_id_.valid(); }

 private:
  // What the first open found out about one records dataset.
  struct Shape {
    std::vector<hsize_t> dims;
    std::size_t type_size = 0;
    std::uint64_t row_bytes = 0;
  };
  // One open records dataset.
  struct Dataset {
    std::string name;
    Handle id;
    Handle space;   // file dataspace, reselected per read
    Handle type;    // the dataset's own type: no conversion
    Handle memory;  // 1-D dataspace of one row
  };

  Hdf5Reader(std::string path, const ReaderOptions& options);

  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  Result<std::vector<ByteRange>> SampleRangesImpl(std::uint64_t index);
  // Opens the storage file and the HDF5 file.
  Status OpenFile();
  // Opens the records datasets; the first time records their shapes,
  // later checks that they did not change.
  Status OpenDatasets();
  Status OpenDatasetsOf(std::vector<Shape>* shapes);
  // Closes the datasets; keeps the first error in `first`.
  void CloseDatasets(Status* first);
  Status ReadRows(std::uint64_t index);
  // Closes everything; returns the first error.
  Status CloseFile();
  // Closes everything, ignoring errors (after a failure).
  void AbortFile();

  // The HDF5 error stack (and any storage failure behind it) as a Status.
  Status Fail(const std::string& what);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;
  // The object header address of `object` (0 when HDF5 cannot tell).
  std::uint64_t ObjectAddress(hid_t object);

  const std::string path_;
  Storage* storage_ = nullptr;
  const bool decode_ = true;
  const bool keep_in_memory_ = false;

  std::unique_ptr<File> file_;
  std::shared_ptr<StorageChannel> channel_;
  Handle file_id_;
  std::vector<Dataset> datasets_;

  std::vector<Shape> shapes_;  // from the first open
  // File offset of each records dataset's data (SampleRanges), once known.
  std::vector<std::uint64_t> data_offsets_;
  std::uint64_t num_samples_ = 0;
  std::uint64_t sample_bytes_ = 0;
  std::uint64_t opens_ = 0;
  Buffer sample_;
};

}  // namespace iomimic::hdf5
