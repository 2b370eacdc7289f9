// Reading samples of indexed-binary datasets the way DLIO's
// IndexedBinaryReader does.
//
// DLIO loads both index files of a data file once (open, one readinto of the
// whole file, close; the offsets first) and keeps them; then each sample is
// open(data) + seek(offset[i]) + readinto(size[i]) + close in read_type
// on_demand, or the same seek + readinto on a data file kept open in
// read_type memory. The data are never cached.
//
// Here, opening a reader takes the index from the format's IndexCache, or,
// when it is not cached (or its data file changed size), reads the two index
// files whole (one request each, .off.idx then .sz.idx; requests of 64 MiB
// for larger indexes), checks every entry against the data file's size and
// caches it. The reader then opens the data file; ReadSample(i) is ONE ranged
// request of size[i] bytes at offset[i] (split into transfer_size requests
// when ReaderOptions::transfer_size is set) into a buffer from
// storage.Allocate(). With on_demand the data file is closed after each sample
// and reopened for the next; with keep_in_memory it stays open for the
// reader's life (the index is always kept; data are not).
//
// The same reader serves mmap_indexed_binary (DLIO's IndexedBinaryMMapReader,
// np.memmap of the data and index files): through the storage seam a sample
// is the same ranged read. The page-fault driven access pattern of a memory
// map is what the storage back end does, so it is reproduced by running this
// format on the `mmap` storage back end, not by the format. (DLIO's mmap
// reader only slices the map and never touches the sample's bytes, so DLIO
// itself often reads nothing; iomimic reads the bytes a training step would
// consume.)
//
// decode: the bytes are the sample (raw uint8), so decoding is returning the
// view; without decoding the same request is made and only the size is
// returned. The sample lands in a buffer from storage.Allocate(), wherever the
// back end places it; when that is device memory the view is empty too (the
// bytes are where a GPU pipeline wants them, host code cannot look at them).
// The index files are always read into host memory.

#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "index_cache.h"
#include "indexed_binary_common.h"
#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::indexed_binary {

class IndexedBinaryReader final : public FileReader {
 public:
  // Opens `path` (the data file) on options.storage with its index from
  // `cache` (may be null: no caching). kInvalidArgument without a storage;
  // kNotFound naming the index file when one is missing; kCorruption naming
  // the index file and entry when the index does not fit the data file.
  // Never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options, Flavor flavor,
                                                  IndexCache* cache);

  ~IndexedBinaryReader() override;

  // Entries in the index.
  std::uint64_t num_samples() const override { return index_->num_samples(); }

  // One ranged read of the sample's bytes. kOutOfRange for index >=
  // num_samples(); kCorruption with path and offset when the data file ends
  // before the sample does.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For collective back ends: the one byte range of sample `index` in
  // data_file() (none for an empty sample). kOutOfRange past the end.
  Result<std::vector<ByteRange>> SampleRanges(std::uint64_t index) override;

  // The open data file: from OpenReader on with keep_in_memory (what the
  // core's collective path uses), until the first ReadSample otherwise; null
  // while closed.
  File* data_file() override { return file_.get(); }

  const SampleIndex& index() const { return *index_; }
  // Whether this reader read the index files itself (a cache miss), for tests.
  bool loaded_index() const { return loaded_index_; }

 private:
  IndexedBinaryReader(std::string path, const ReaderOptions& options, Flavor flavor,
                      IndexCache* cache);

  Status Init();
  // Reads both index files whole into `offsets` and `sizes` (unchecked).
  Status ReadIndexFiles(std::vector<std::uint64_t>* offsets, std::vector<std::uint64_t>* sizes);
  Status ReadIndexFile(const std::string& index_path, std::vector<std::uint64_t>* entries);
  // Checks the entries against data_size_ and builds index_.
  Status BuildIndex(std::vector<std::uint64_t> offsets, std::vector<std::uint64_t> sizes);
  Status OpenData();
  void CloseData();
  Result<SampleView> ReadSampleImpl(std::uint64_t index);

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = 0;  // 0: one request per sample
  Flavor flavor_;
  std::string name_;  // FlavorName(flavor_), for messages
  IndexCache* cache_ = nullptr;

  std::shared_ptr<const SampleIndex> index_;
  bool loaded_index_ = false;
  std::unique_ptr<File> file_;  // the data file while open
  std::uint64_t data_size_ = 0;
  Buffer buffer_;  // the sample read (storage.Allocate); grows when needed
};

}  // namespace iomimic::indexed_binary
