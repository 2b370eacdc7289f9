// Reading samples from .npz files the way DLIO's NPZReader does:
// np.load(path)['x'] materialises the whole x array, then x[..., i] is the
// sample. One "load" issues the storage requests of np.load:
//   1. 4 KiB at offset 0 (np.load's magic check),
//   2. the 22-byte end record at the tail (a wider tail read when the archive
//      has a comment), then the 20 bytes before it (the ZIP64 locator probe)
//      and the ZIP64 end record when there is one,
//   3. the central directory,
//   4. 4 KiB at the x.npy local header (local header, NPY header and the
//      first array bytes),
//   5. the rest of the x.npy member, sequentially, in requests that end on
//      multiples of the transfer size (default 256 KiB, numpy's read size),
//      so from a 4 KiB head the first request is 258,048 bytes as in strace.
// y.npy is never read. With read_type on_demand every ReadSample performs a
// whole load (open, the requests above, close); with keep_in_memory the
// first load is kept. OpenReader performs steps 1-4 of the first load, so
// that num_samples() is known, and the first ReadSample finishes it.
//
// That sequence is ReadPattern::kDirect (manifest dataset.read_pattern:
// direct), numpy reading an .npz member without Python's buffering. The
// default, ReadPattern::kDlio, is the exact request sequence of DLIO's
// np.load(path)['x'] on CPython 3.11 + numpy 1.24 (docs/dlio-compat.md
// §2.4): np.load and zipfile read through a 4 KiB
// io.BufferedReader (PyBufferedFile below models it call for call), zipfile
// reads the end record with readall() (an fstat, then a read of size-22+1
// bytes and a read that returns 0), NpzFile opens x.npy twice (once to check
// the magic), and numpy reads the array in 256 KiB pieces, which the
// buffered reader splits into a 4 KiB buffer refill and a direct read. For
// DLIO's 4 MiB unet3d file: 41 reads (20 of 4 KiB, 16 of 252-256 KiB, 5
// small), 2 fstat (File::Size), 4,207,278 bytes. lseek/tell calls have no
// storage counterpart (positioned reads carry their offsets), so they are
// not reproduced. ReadPattern::kWhole reads the file in one request. On a
// back end whose buffers are device memory (gds) kDlio reads as kDirect:
// Python's buffer is host memory, numpy's direct requests can go to the
// device.

#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "npy_header/npy_array.h"
#include "npy_header/npy_header.h"
#include "zip/zip_records.h"

namespace iomimic::npz {

// Size of np.load's buffered reads (the BufferedReader's st_blksize).
inline constexpr std::size_t kProbeSize = 4096;
// numpy.lib.format.BUFFER_SIZE: np.load reads array data in 2^18-byte pieces.
inline constexpr std::uint64_t kDefaultTransferSize = 262144;
// Central directories larger than this are refused (npz files have two entries).
inline constexpr std::uint64_t kMaxDirectorySize = std::uint64_t{64} << 20;

// The zlib state of one raw deflate stream (window bits -15: a ZIP member's
// deflated bytes) being inflated, as MemberStream and PyZipExtFile use it.
class RawInflater {
 public:
  RawInflater() = default;
  RawInflater(const RawInflater&) = delete;
  RawInflater& operator=(const RawInflater&) = delete;
  ~RawInflater() { End(); }

  // Starts a new stream (inflateInit2), ending the previous one.
  // kResourceExhausted when zlib has no memory, kInternal when it refuses
  // otherwise.
  Status Start();
  // Releases zlib's state; Start may be called again.
  void End();
  // One inflate(Z_NO_FLUSH) from `in` into `out` (at most UINT_MAX bytes of
  // each): sets how many bytes it consumed and produced, returns zlib's code.
  int Inflate(std::span<const std::byte> in, std::span<std::byte> out, std::size_t* consumed,
              std::size_t* produced);
  // zlib's message about the last error, or nullptr.
  const char* message() const { return z_.msg; }

 private:
  z_stream z_{};
  bool active_ = false;  // z_ is initialised
};

// Sequential reader of one member's uncompressed bytes. Reads the stored
// (possibly deflated) bytes in requests that end on transfer-size multiples
// of the file offset, starting with bytes the caller already has in memory.
class MemberStream {
 public:
  MemberStream() = default;
  MemberStream(const MemberStream&) = delete;
  MemberStream& operator=(const MemberStream&) = delete;
  ~MemberStream();

  // Starts streaming `member` whose data occupy [begin, begin + compressed
  // size) of `file`. `prefetched` holds file bytes from `begin` on (may be
  // empty). `staging` (transfer-size bytes) receives chunks that are not
  // read straight into the caller's memory. With `check_crc` the CRC-32 of
  // the uncompressed bytes is accumulated.
  Status Start(File* file, const std::string* path, const zip::MemberRecord* member,
               std::uint64_t begin, std::span<const std::byte> prefetched,
               std::span<std::byte> staging, std::uint64_t transfer_size, bool check_crc);

  // Reads exactly out.size() uncompressed bytes (kCorruption when the member
  // ends first or its deflate data are invalid).
  Status Read(std::span<std::byte> out);

  // Reads the member's remaining stored bytes from storage without decoding,
  // into `sink` (at least one transfer chunk; the staging buffer when empty).
  // Nothing on the host looks at them, so the sink may be device memory.
  Status SkipRest(std::span<std::byte> sink = {});

  // After the last Read: checks the member ends here (deflate stream end,
  // uncompressed size) and, with check_crc, its CRC-32.
  Status Finish();

  // Releases zlib state; Start may be called again.
  void Reset();

  std::uint64_t begin() const { return begin_; }

 private:
  Status Corrupt(const std::string& what, std::uint64_t offset) const;
  std::uint64_t ChunkEnd(std::uint64_t offset) const;
  Status ReadRaw(std::uint64_t offset, std::span<std::byte> out);
  // Makes pending_ non-empty with the next chunk of stored bytes.
  Status Refill();
  Status Inflate(std::span<std::byte> out, std::size_t* produced, bool* stream_end);
  // Folds uncompressed bytes just produced into the CRC (with check_crc).
  void Checksum(std::span<const std::byte> bytes);

  File* file_ = nullptr;
  const std::string* path_ = nullptr;
  const zip::MemberRecord* member_ = nullptr;
  std::uint64_t begin_ = 0;
  std::uint64_t end_ = 0;       // end of the stored bytes
  std::uint64_t raw_pos_ = 0;   // next file offset not yet requested
  std::uint64_t produced_ = 0;  // uncompressed bytes handed out
  std::uint64_t transfer_ = kDefaultTransferSize;
  std::span<const std::byte> pending_;  // stored bytes read but not consumed
  std::span<std::byte> staging_;
  bool check_crc_ = false;
  std::uint32_t crc_ = 0;
  bool deflated_ = false;
  bool stream_end_ = false;
  RawInflater inflater_;
};

// How a load issues its storage requests (dataset.read_pattern).
enum class ReadPattern : std::uint8_t { kDlio = 0, kDirect = 1, kWhole = 2 };

// Parses "dlio", "direct" or "whole"; kInvalidArgument names the choices.
Result<ReadPattern> ParseReadPattern(std::string_view text);

// CPython 3.11's io.BufferedReader (buffer of kProbeSize bytes) over
// io.FileIO, reduced to the calls np.load and zipfile make. Every read(2) it
// would make is one File::ReadAt here; lseek(2)s are not made (positioned
// reads), and the fstat of FileIO.readall is a File::Size call.
class PyBufferedFile {
 public:
  // Starts on `file` at offset 0 with an empty buffer. The size is learnt
  // from the first readall's fstat (File::Size), as Python's lseek(SEEK_END)
  // learns it from the kernel without a call of its own here.
  void Reset(File* file);
  // BufferedReader.seek(-back, 2) before the size is known: resolved by the
  // next ReadAll.
  void SeekBackFromEnd(std::uint64_t back);
  // The file size from ReadAll's fstat (0 before).
  std::uint64_t size() const { return size_; }
  // BufferedReader.tell().
  std::uint64_t Tell() const;
  // BufferedReader.seek(target) (absolute). Within the buffered bytes it
  // only moves in the buffer; elsewhere (and always with `from_end`, i.e.
  // whence 2) it drops the buffer.
  void Seek(std::uint64_t target, bool from_end = false);
  // BufferedReader.read(n) into `out`: buffered bytes, then direct reads of
  // whole buffer-size blocks, then buffer refills for the rest. Returns the
  // bytes delivered (fewer only at the end of the file).
  Result<std::size_t> Read(std::size_t n, std::byte* out);
  // BufferedReader.read() (readall): buffered bytes, then FileIO.readall:
  // an fstat, reads of (size - position + 1) bytes until one returns 0.
  // kOutOfRange when a pending SeekBackFromEnd goes before the start.
  Result<std::vector<std::byte>> ReadAll();

 private:
  Result<std::size_t> Raw(std::uint64_t offset, std::span<std::byte> out);

  File* file_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t back_ = 0;  // SeekBackFromEnd pending
  bool back_pending_ = false;
  std::uint64_t raw_ = 0;  // the file position of the raw FileIO
  std::vector<std::byte> buffer_ = std::vector<std::byte>(kProbeSize);
  bool valid_ = false;   // the buffer holds [raw_ - end_, raw_)
  std::size_t pos_ = 0;  // next buffered byte
  std::size_t end_ = 0;  // buffered bytes
};

// zipfile.ZipExtFile over a PyBufferedFile shared with the ZipFile (the
// _SharedFile seeks to its own position before every read): reads of at
// least MIN_READ_SIZE (4 KiB) stored bytes, decompressed with zlib for
// deflated members as zlib.decompressobj(-15).decompress(data, n) does.
class PyZipExtFile {
 public:
  PyZipExtFile() = default;
  PyZipExtFile(const PyZipExtFile&) = delete;
  PyZipExtFile& operator=(const PyZipExtFile&) = delete;
  // The member's stored bytes start at `data_offset` of `file`. With
  // `check_crc` the CRC-32 is checked when the end is reached, as zipfile
  // does (iomimic checks nothing without decoding).
  Status Start(PyBufferedFile* file, const std::string* path, const zip::MemberRecord* member,
               std::uint64_t data_offset, bool check_crc);
  // ZipExtFile.read(n) into `out`; fewer bytes only at the member's end.
  Result<std::size_t> Read(std::size_t n, std::byte* out);
  // After the last read: kCorruption when the CRC-32 of the member (with
  // check_crc) did not match. zipfile raises at the read that reaches the
  // end; iomimic reports it after the NPY header and array were parsed, so
  // a damaged header is named as such.
  Status CheckCrc() const;

 private:
  Result<std::size_t> Read1(std::size_t n);  // into chunk_, returns its size
  Status Read2(std::size_t n, std::vector<std::byte>* out);

  PyBufferedFile* file_ = nullptr;
  const std::string* path_ = nullptr;
  const zip::MemberRecord* member_ = nullptr;
  std::uint64_t begin_ = 0;  // data_offset
  std::uint64_t shared_pos_ = 0;
  std::uint64_t compress_left_ = 0;
  bool check_crc_ = false;
  std::uint64_t left_ = 0;
  bool eof_ = false;
  bool deflated_ = false;
  std::uint32_t crc_ = 0;
  bool crc_bad_ = false;
  std::vector<std::byte> readbuffer_;  // ZipExtFile._readbuffer
  std::size_t offset_ = 0;             // ZipExtFile._offset
  std::vector<std::byte> raw_;         // stored bytes of one _read2
  std::vector<std::byte> tail_;        // decompressor.unconsumed_tail
  std::vector<std::byte> chunk_;       // what one _read1 returns
  RawInflater inflater_;
};

class NpzReader final : public FileReader {
 public:
  // Opens `path` on options.storage and performs the metadata part of the
  // first load. Never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options,
                                                  ReadPattern pattern = ReadPattern::kDlio);

  ~NpzReader() override;

  std::uint64_t num_samples() const override { return layout_.num_samples; }

  // Sample `index` as x[..., index] in C order (decode) or just its size
  // (no decode). kOutOfRange for index >= num_samples().
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // The x.npy header of the first load.
  const numpy::NpyHeader& header() const { return header_; }
  std::uint64_t sample_bytes() const { return layout_.sample_bytes; }
  // Loads performed so far (whole-member reads), for tests.
  std::uint64_t loads() const { return loads_; }

 private:
  NpzReader(std::string path, const ReaderOptions& options, ReadPattern pattern);

  Status Init();
  // Steps 1-4 of a load: leaves file_ open and stream_ after the NPY header.
  Status BeginLoad();
  // Step 5: reads the array data (into payload_ when decoding), closes file_.
  Status FinishLoad();
  Status LoadMetadata(numpy::NpyHeader* header);
  // kDlio's steps 1-4: np.load, ZipFile and the two ZipFile.open('x.npy').
  Status LoadMetadataPython(numpy::NpyHeader* header);
  // The steps of LoadMetadataPython, each on py_: BufferedReader.read with
  // the error naming `what`;
  Result<std::size_t> PyRead(std::size_t n, std::byte* out, const char* what);
  // np.load's magic check;
  Status PyCheckMagic();
  // zipfile._EndRecData (the end record) and _EndRecData64 (its ZIP64 twin);
  Status PyReadEndRecord(zip::EndRecord* end);
  Status PyReadZip64End(zip::EndRecord* end);
  // zipfile._RealGetContents: reads and parses the central directory;
  Status PyReadDirectory(const zip::EndRecord& end);
  // ZipFile.open('x.npy'): reads the local header, starts member_file_ and
  // returns where the member's data start;
  Result<std::uint64_t> PyOpenMember();
  // ZipExtFile.read of exactly out.size() bytes (kCorruption at the member's end);
  Status PyMemberRead(std::span<std::byte> out, std::uint64_t data_offset);
  // read_array's NPY header, checked against the member (CheckNpyHeader).
  Status PyReadNpyHeader(std::uint64_t data_offset, numpy::NpyHeader* header);
  // kDlio's step 5: numpy's read_array loop over the ZipExtFile.
  Status FinishLoadPython();
  // Parses directory_ (found at directory_start, `concat` bytes after where
  // the end record places it) into member_ and checks x.npy can be read.
  Status ParseDirectory(std::uint64_t directory_start, std::uint64_t concat);
  // Reads x.npy's NPY header (preamble, length, dict) through `read`
  // (Status(std::span<std::byte>), exactly that many bytes of the member,
  // whose data start at `data_offset`), parses it into `header` and checks
  // it against the member (CheckNpyHeader).
  template <typename Read>
  Status ReadNpyHeader(Read&& read, std::uint64_t data_offset, numpy::NpyHeader* header);
  // Checks the NPY header against the member's size; sets data_bytes_.
  Status CheckNpyHeader(numpy::NpyHeader* header, std::uint64_t data_offset);
  Status ReadEndRecords(std::uint64_t size, zip::EndRecord* end);
  // Where the central directory starts, as zipfile locates it: just before
  // the end records (a difference from the recorded offset is prepended
  // data). Corruption when the sizes do not fit.
  Result<std::uint64_t> DirectoryStart(const zip::EndRecord& end) const;
  Status ReadExact(std::uint64_t offset, std::span<std::byte> out, const char* what);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;
  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  Result<SampleView> Gather(std::uint64_t index);
  void AbortLoad();

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = kDefaultTransferSize;
  ReadPattern pattern_ = ReadPattern::kDlio;

  std::unique_ptr<File> file_;
  // kWhole: the file's bytes, read in one request; file_ then reads from them.
  Buffer whole_;
  // kDlio: Python's buffered file and the x.npy member opened on it.
  PyBufferedFile py_;
  PyZipExtFile member_file_;
  bool metadata_ready_ = false;  // BeginLoad done, FinishLoad pending
  bool loaded_ = false;          // a complete load is in memory (keep_in_memory)
  std::uint64_t loads_ = 0;

  numpy::NpyHeader header_;       // from the first load
  numpy::NpyHeader load_header_;  // from the current load
  zip::MemberRecord member_;
  std::uint64_t data_bytes_ = 0;
  numpy::SampleLayout layout_;  // of header_

  std::vector<std::byte> directory_;
  std::vector<std::byte> tail_;
  Buffer probe_;    // kProbeSize bytes
  Buffer staging_;  // min(transfer size, member size) bytes; grows when needed
  Buffer payload_;  // the x array data (decode only); grows when needed
  // Without decoding, on a back end whose buffers live in device memory: where
  // a stored member's bytes are read to (storage.Allocate, so the back end's
  // device path moves them; staging_ stays host memory for the headers).
  Buffer sink_;
  Buffer sample_;  // gathered sample; grows when needed
  MemberStream stream_;
};

}  // namespace iomimic::npz
