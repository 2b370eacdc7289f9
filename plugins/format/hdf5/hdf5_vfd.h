// An HDF5 virtual file driver (VFD) that moves every byte HDF5 reads or
// writes through an iomimic::File, so HDF5 files live on any storage back end
// and their requests are counted like those of any other format.
//
// The plugin opens the iomimic::File itself and wraps it in a StorageChannel.
// MakeFileAccess() puts the channel into a file access property list as the
// driver's info; the driver's open callback finds it there (no globals, no
// thread-locals), so any number of files can be open at once on any threads.
// HDF5 copies driver info with the fapl_copy/fapl_free callbacks, which share
// the channel (std::shared_ptr): the channel outlives every HDF5 handle on it,
// and Detach() makes a handle that HDF5 might still hold fail cleanly instead
// of touching a destroyed File.
//
// The driver mirrors HDF5's default sec2 driver: the same feature flags
// (metadata aggregation and accumulation, data sieving, small-data
// aggregation), so HDF5 issues the same requests, and a file written through
// it is byte-compatible with sec2 (h5py opens it normally). Differences:
//   - no POSIX handle: HDF5 skips the lstat() of the file name it does for
//     sec2 and get_handle returns the iomimic::File*;
//   - no file locking (flock) callbacks;
//   - the file can only grow: truncate() extends a file shorter than HDF5's
//     end of allocation with zeros, and leaves a longer one as it is (HDF5 and
//     h5py accept trailing bytes).
// Reads past the end of the file return zeros, as sec2 does. Storage errors
// are kept in the channel (the first one since TakeStorageError) so the
// plugin reports "<path>: read of N bytes at offset X failed: <message>"
// with the storage's own status code.
//
// Write failures are NOT reported to HDF5. HDF5 1.10 cannot close a file
// whose final flush failed: H5Fclose fails, the half-destroyed file stays in
// HDF5's identifier table and HDF5 crashes on it when it shuts down at
// process exit. So a failed write is recorded in the channel, every later
// write is dropped (the file is being abandoned; the first error is what
// counts), HDF5 carries on and closes cleanly, and the writer checks
// StorageChannel::write_failed() after each HDF5 call. Read failures are
// reported to HDF5 normally (closing a read-only file does no I/O).
//
// The driver class is registered once per process (std::call_once) and never
// unregistered; the plugin never calls H5close, so HDF5 is never torn down
// while files are open. The class has no terminate callback, so HDF5's own
// shutdown at process exit never calls into an unloaded plugin.

#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "hdf5_support.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::hdf5 {

// Name of the driver class as HDF5 lists it.
inline constexpr char kDriverName[] = "iomimic";

// The connection between one HDF5 file and one iomimic::File. The driver
// calls it while HDF5 holds its global lock; the channel has its own mutex so
// that Detach() and the accessors are safe from any thread.
class StorageChannel {
 public:
  // `file` stays owned by the caller, who must Detach() before destroying it.
  // `path` is used in messages.
  StorageChannel(File* file, std::string path);

  StorageChannel(const StorageChannel&) = delete;
  StorageChannel& operator=(const StorageChannel&) = delete;

  // Stops all further I/O: later requests fail with kAborted.
  void Detach();

  const std::string& path() const { return path_; }

  // Requests made through the driver.
  struct Counters {
    std::uint64_t reads = 0;
    std::uint64_t read_bytes = 0;
    std::uint64_t writes = 0;
    std::uint64_t write_bytes = 0;
  };
  Counters counters() const;

  // The first storage failure since the last call, or OK. Clears it.
  Status TakeStorageError();

  // Offset and length of the most recent read request (0, 0 before any).
  std::uint64_t last_read_offset() const;
  std::uint64_t last_read_size() const;

  // The file size seen when the driver last opened the file.
  std::uint64_t size_at_open() const;

  // --- Used by the driver. Each failure is also recorded for TakeStorageError.

  // File::Size of the file; remembered as size_at_open().
  Result<std::uint64_t> Size();
  // Fills all of `out` from `offset`; bytes past the end of the file read as
  // zeros.
  Status Read(std::uint64_t offset, std::span<std::byte> out);
  // Writes all of `data` at `offset`. After a failed write, later writes do
  // nothing and return OK (see the header comment).
  Status Write(std::uint64_t offset, std::span<const std::byte> data);
  // Writes zeros over [from, to).
  Status WriteZeros(std::uint64_t from, std::uint64_t to);
  // True once a write has failed (stays true).
  bool write_failed() const;
  // Records a failure that is not a storage error (e.g. a bad request).
  void RecordError(Status status);

 private:
  Status RecordLocked(Status status);

  mutable std::mutex mu_;
  File* file_;
  const std::string path_;
  Status error_;
  Counters counters_;
  std::uint64_t last_read_offset_ = 0;
  std::uint64_t last_read_size_ = 0;
  std::uint64_t size_at_open_ = 0;
  bool write_failed_ = false;
};

// The driver's HDF5 identifier, registering the class on first use.
// kInternal when HDF5 refuses the registration (then every later call says so
// too).
Result<hid_t> DriverId();

// Options of a file access property list made for a channel.
struct FileAccessOptions {
  // H5Pset_libver_bounds(LATEST, LATEST), as DLIO's h5py.File(libver='latest').
  bool latest_format = false;
  // H5Pset_sieve_buf_size; negative keeps HDF5's default (64 KiB). The writer
  // uses 0 so that writes smaller than the buffer go straight to storage
  // instead of making HDF5 read the region back first.
  std::int64_t sieve_buffer_size = -1;
};

// A new file access property list whose driver is this VFD, bound to
// `channel`, with the close degree STRONG (closing the file closes every
// object still open in it).
Result<Handle> MakeFileAccess(std::shared_ptr<StorageChannel> channel,
                              const FileAccessOptions& options);

}  // namespace iomimic::hdf5
