// The `mpiio` storage back end: files read and written with MPI-IO, for
// shared-file datasets that every rank reads its shard of.
//
// Three read modes (option `mode`), reported as the data path:
//   independent  every request is an MPI_File_read_at on the rank's own
//                handle (MPI_COMM_SELF); works with any format and loader.
//   collective   the core issues one ReadBatch per training step with all the
//                step's sample ranges, on every rank in lockstep; it becomes
//                one MPI_File_read_at_all over a file view of those ranges, on
//                a handle opened on MPI_COMM_WORLD (two-phase I/O in ROMIO/OMPIO).
//   aggregator   ranks form groups of `group_size`; in each step the group
//                leader gathers its members' ranges, reads them all, and
//                scatters the bytes back (the "few readers broadcast" scheme).
// Collective and aggregator need formats that describe samples as byte ranges
// (FileReader::SampleRanges: indexed binary) and a dataset whose step reads
// one shared file; the core checks both. Writes are MPI_File_write_at calls,
// except in shared-file generation (File::WriteAtAll, capability
// shared_files): there every rank writes its slice of each file, with
// MPI_File_write_at_all on a handle opened on MPI_COMM_WORLD in the collective
// and aggregator modes (ROMIO/OMPIO's two-phase collective buffering is the
// write-side aggregation), and independently in the independent mode. Metadata (mkdir, rename,
// stat) uses POSIX calls: MPI-IO has none. MPI hints go through the options cb_nodes,
// cb_buffer_size and romio_cb_read.

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "iomimic/file_system.h"
#include "iomimic/iomimic.h"

namespace iomimic::mpiio {

// The descriptor's flags, and what capabilities() may claim (collective unless mode is
// independent).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_COLLECTIVE;
namespace {

enum class Mode { kIndependent, kCollective, kAggregator };

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

Status Fail(int code, const std::string& what) {
  return Status::IOError(what + ": " + MpiError(code));
}

// MPI counts are ints: move at most 1 GiB per call.
constexpr std::size_t kMaxCall = 1u << 30;

struct Options {
  Mode mode = Mode::kIndependent;
  int group_size = 2;
  std::map<std::string, std::string> hints;
};

class MpiioStorage;

class MpiioFile final : public File {
 public:
  MpiioFile(MPI_File handle, std::string path, MpiioStorage* owner)
      : handle_(handle), path_(std::move(path)), owner_(owner) {}
  ~MpiioFile() override { (void)Close(); }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> dst) override {
    std::size_t done = 0;
    while (done < dst.size()) {
      const int want = static_cast<int>(std::min(kMaxCall, dst.size() - done));
      MPI_Status st;
      int rc = MPI_File_read_at(handle_, static_cast<MPI_Offset>(offset + done), dst.data() + done,
                                want, MPI_BYTE, &st);
      if (rc != MPI_SUCCESS) {
        return Fail(rc,
                    "MPI_File_read_at " + path_ + " at offset " + std::to_string(offset + done));
      }
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      if (got <= 0) break;  // end of file
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> src) override {
    std::size_t done = 0;
    while (done < src.size()) {
      const int want = static_cast<int>(std::min(kMaxCall, src.size() - done));
      MPI_Status st;
      int rc = MPI_File_write_at(handle_, static_cast<MPI_Offset>(offset + done), src.data() + done,
                                 want, MPI_BYTE, &st);
      if (rc != MPI_SUCCESS) {
        return Fail(rc,
                    "MPI_File_write_at " + path_ + " at offset " + std::to_string(offset + done));
      }
      int put = 0;
      MPI_Get_count(&st, MPI_BYTE, &put);
      if (put <= 0) return Status::IOError("MPI_File_write_at " + path_ + ": wrote nothing");
      done += static_cast<std::size_t>(put);
    }
    return Status::OK();
  }

  Status ReadBatch(std::span<ReadRequest> requests) override;

  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override;

  Status Sync() override {
    int rc = MPI_File_sync(handle_);
    return rc == MPI_SUCCESS ? Status::OK() : Fail(rc, "MPI_File_sync " + path_);
  }

  Result<std::uint64_t> Size() override {
    MPI_Offset size = 0;
    int rc = MPI_File_get_size(handle_, &size);
    if (rc != MPI_SUCCESS) return Fail(rc, "MPI_File_get_size " + path_);
    return static_cast<std::uint64_t>(size);
  }

  // Collective when WriteAtAll opened a shared handle: every rank that wrote
  // closes too (shared-file generation does).
  Status Close() override {
    Status status;
    if (all_handle_ != MPI_FILE_NULL) {
      int rc = MPI_File_close(&all_handle_);
      all_handle_ = MPI_FILE_NULL;
      if (rc != MPI_SUCCESS) status = Fail(rc, "collective MPI_File_close " + path_);
    }
    if (handle_ == MPI_FILE_NULL) return status;
    int rc = MPI_File_close(&handle_);
    handle_ = MPI_FILE_NULL;
    if (rc != MPI_SUCCESS && status.ok()) status = Fail(rc, "MPI_File_close " + path_);
    return status;
  }

  const std::string& path() const override { return path_; }

 private:
  Status ReadBatchIndependent(std::span<ReadRequest> requests) { return File::ReadBatch(requests); }
  Status ReadBatchCollective(std::span<ReadRequest> requests);
  Status ReadBatchAggregated(std::span<ReadRequest> requests);

  MPI_File handle_;
  MPI_File all_handle_ = MPI_FILE_NULL;  // opened on all ranks by WriteAtAll
  std::string path_;
  MpiioStorage* owner_;
};

class MpiioStorage final : public FileSystemStorage {
 public:
  explicit MpiioStorage(const Options& options) : options_(options) {
    MPI_Info_create(&info_);
    for (const auto& [k, v] : options_.hints) MPI_Info_set(info_, k.c_str(), v.c_str());
    MPI_Comm_dup(MPI_COMM_WORLD, &world_);
    int rank = 0;
    MPI_Comm_rank(world_, &rank);
    // Groups of consecutive ranks; rank 0 of each group is its aggregator.
    MPI_Comm_split(world_, rank / options_.group_size, rank, &group_);
  }

  ~MpiioStorage() override {
    for (auto& [path, handle] : shared_) MPI_File_close(&handle);
    MPI_Comm_free(&group_);
    MPI_Comm_free(&world_);
    MPI_Info_free(&info_);
  }

  std::string name() const override { return "mpiio"; }

  StorageCapabilities capabilities() const override {
    StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);
    caps.collective = caps.collective && options_.mode != Mode::kIndependent;
    caps.shared_files = true;
    switch (options_.mode) {
      case Mode::kIndependent:
        caps.data_path = "mpiio-independent";
        break;
      case Mode::kCollective:
        caps.data_path = "mpiio-collective";
        break;
      case Mode::kAggregator:
        caps.data_path = "mpiio-aggregator(group " + std::to_string(options_.group_size) + ")";
        break;
    }
    return caps;
  }

  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    int amode = 0;
    switch (options.mode) {
      case OpenMode::kRead:
        amode = MPI_MODE_RDONLY;
        break;
      case OpenMode::kWrite:
        amode = MPI_MODE_WRONLY | MPI_MODE_CREATE;
        break;
      case OpenMode::kReadWrite:
        amode = MPI_MODE_RDWR | MPI_MODE_CREATE;
        break;
    }
    if (options.mode == OpenMode::kRead) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "open " + path);
    }
    // MPI_File_open would block on a named pipe: only regular files.
    IOMIMIC_RETURN_IF_ERROR(CheckRegularPath(path));
    MPI_File handle = MPI_FILE_NULL;
    int rc = MPI_File_open(MPI_COMM_SELF, path.c_str(), amode, info_, &handle);
    if (rc != MPI_SUCCESS) return Fail(rc, "MPI_File_open " + path);
    if (options.mode == OpenMode::kWrite) {
      rc = MPI_File_set_size(handle, 0);  // truncate, as O_TRUNC
      if (rc != MPI_SUCCESS) {
        MPI_File_close(&handle);
        return Fail(rc, "MPI_File_set_size " + path);
      }
    }
    return std::unique_ptr<File>(new MpiioFile(handle, path, this));
  }

  Mode mode() const { return options_.mode; }
  MPI_Comm group() const { return group_; }
  MPI_Comm world() const { return world_; }
  MPI_Info info() const { return info_; }

  // The handle opened on every rank for collective reads of `path`. Opening
  // is collective, which is safe here: ReadBatch is called in lockstep.
  Result<MPI_File> SharedHandle(const std::string& path) {
    auto it = shared_.find(path);
    if (it != shared_.end()) return it->second;
    IOMIMIC_RETURN_IF_ERROR(CheckRegularPath(path));
    MPI_File handle = MPI_FILE_NULL;
    int rc = MPI_File_open(world_, path.c_str(), MPI_MODE_RDONLY, info_, &handle);
    if (rc != MPI_SUCCESS) return Fail(rc, "collective MPI_File_open " + path);
    shared_[path] = handle;
    return handle;
  }

 private:
  Options options_;
  MPI_Info info_ = MPI_INFO_NULL;
  MPI_Comm world_ = MPI_COMM_NULL;
  MPI_Comm group_ = MPI_COMM_NULL;
  std::map<std::string, MPI_File> shared_;
};

Status MpiioFile::ReadBatch(std::span<ReadRequest> requests) {
  switch (owner_->mode()) {
    case Mode::kIndependent:
      return ReadBatchIndependent(requests);
    case Mode::kCollective:
      return ReadBatchCollective(requests);
    case Mode::kAggregator:
      return ReadBatchAggregated(requests);
  }
  return Status::Internal("unknown mode");
}

Status MpiioFile::WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) {
  if (owner_->mode() == Mode::kIndependent) return File::WriteAtAll(offset, source);
  // Every rank must make the call, so nothing may return before it: an
  // oversized request joins with no data and fails afterwards.
  const bool too_large = source.size() > kMaxCall;
  int rc = MPI_SUCCESS;
  if (all_handle_ == MPI_FILE_NULL) {
    rc = MPI_File_open(owner_->world(), path_.c_str(), MPI_MODE_WRONLY, owner_->info(),
                       &all_handle_);
    if (rc != MPI_SUCCESS) {
      all_handle_ = MPI_FILE_NULL;
      return Fail(rc, "collective MPI_File_open " + path_);
    }
  }
  const int count = too_large ? 0 : static_cast<int>(source.size());
  MPI_Status st;
  rc = MPI_File_write_at_all(all_handle_, static_cast<MPI_Offset>(offset), source.data(), count,
                             MPI_BYTE, &st);
  if (rc != MPI_SUCCESS) {
    return Fail(rc, "MPI_File_write_at_all " + path_ + " at offset " + std::to_string(offset));
  }
  if (too_large) {
    return Status::NotSupported(path_ + ": a collective write of more than 1 GiB per call");
  }
  int put = 0;
  MPI_Get_count(&st, MPI_BYTE, &put);
  if (put != count) {
    return Status::IOError("MPI_File_write_at_all " + path_ + " at offset " +
                           std::to_string(offset) + ": wrote " + std::to_string(put) + " of " +
                           std::to_string(count) + " bytes");
  }
  return Status::OK();
}

Status MpiioFile::ReadBatchCollective(std::span<ReadRequest> requests) {
  IOMIMIC_ASSIGN_OR_RETURN(MPI_File shared, owner_->SharedHandle(path_));
  // File views need non-decreasing displacements: read in offset order into
  // a staging buffer, then hand each request its bytes.
  std::vector<std::size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return requests[a].offset < requests[b].offset; });
  std::vector<int> lengths;
  std::vector<MPI_Aint> displacements;
  std::size_t total = 0;
  for (std::size_t i : order) {
    if (requests[i].destination.size() > static_cast<std::size_t>(INT_MAX)) {
      return Status::NotSupported(path_ + ": collective request larger than 2 GiB");
    }
    lengths.push_back(static_cast<int>(requests[i].destination.size()));
    displacements.push_back(static_cast<MPI_Aint>(requests[i].offset));
    total += requests[i].destination.size();
  }
  if (total > static_cast<std::size_t>(INT_MAX)) {
    return Status::NotSupported(path_ + ": collective step larger than 2 GiB");
  }
  MPI_Datatype filetype;
  MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), displacements.data(),
                           MPI_BYTE, &filetype);
  MPI_Type_commit(&filetype);
  std::vector<std::byte> staging(total);
  int rc = MPI_File_set_view(shared, 0, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
  MPI_Status st;
  if (rc == MPI_SUCCESS) {
    rc = MPI_File_read_at_all(shared, 0, staging.data(), static_cast<int>(total), MPI_BYTE, &st);
  }
  MPI_File_set_view(shared, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_Type_free(&filetype);
  if (rc != MPI_SUCCESS) return Fail(rc, "MPI_File_read_at_all " + path_);
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  std::size_t at = 0;
  Status first;
  for (std::size_t i : order) {
    ReadRequest& r = requests[i];
    std::size_t n = r.destination.size();
    std::size_t available = static_cast<std::size_t>(std::max(0, got)) > at
                                ? std::min(n, static_cast<std::size_t>(got) - at)
                                : 0;
    std::memcpy(r.destination.data(), staging.data() + at, available);
    r.bytes_read = available;
    r.status = Status::OK();
    at += n;
  }
  return first;
}

Status MpiioFile::ReadBatchAggregated(std::span<ReadRequest> requests) {
  MPI_Comm group = owner_->group();
  int rank = 0, size = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  // 1. Every member sends its (offset, length) pairs to the leader.
  std::vector<std::uint64_t> mine;
  for (const ReadRequest& r : requests) {
    mine.push_back(r.offset);
    mine.push_back(r.destination.size());
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, group);
  int total_pairs = 0;
  if (rank == 0) {
    for (int i = 0; i < size; ++i) {
      displs[static_cast<std::size_t>(i)] = total_pairs;
      total_pairs += counts[static_cast<std::size_t>(i)];
    }
  }
  std::vector<std::uint64_t> all(static_cast<std::size_t>(std::max(total_pairs, 1)));
  MPI_Gatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
              MPI_UINT64_T, 0, group);
  // 2. The leader reads every range of its group.
  std::vector<int> byte_counts(static_cast<std::size_t>(size)),
      byte_displs(static_cast<std::size_t>(size));
  std::vector<std::byte> gathered;
  Status status;
  if (rank == 0) {
    std::size_t total = 0;
    for (int i = 0; i < size; ++i) {
      std::size_t member = 0;
      for (int k = 0; k < counts[static_cast<std::size_t>(i)]; k += 2) {
        member += all[static_cast<std::size_t>(displs[static_cast<std::size_t>(i)] + k + 1)];
      }
      byte_displs[static_cast<std::size_t>(i)] = static_cast<int>(total);
      byte_counts[static_cast<std::size_t>(i)] = static_cast<int>(member);
      total += member;
    }
    gathered.resize(total);
    std::size_t at = 0;
    for (int k = 0; k < total_pairs && status.ok(); k += 2) {
      std::uint64_t off = all[static_cast<std::size_t>(k)],
                    len = all[static_cast<std::size_t>(k + 1)];
      Result<std::size_t> n = ReadAt(off, std::span<std::byte>(gathered.data() + at, len));
      if (!n.ok()) status = n.status();
      at += len;
    }
  }
  // 3. The leader scatters each member's bytes back (even after an error, so
  //    nobody waits; the error is then shared).
  int failed = status.ok() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, group);
  std::size_t my_bytes = 0;
  for (const ReadRequest& r : requests) my_bytes += r.destination.size();
  std::vector<std::byte> received(my_bytes);
  MPI_Scatterv(gathered.data(), byte_counts.data(), byte_displs.data(), MPI_BYTE, received.data(),
               static_cast<int>(my_bytes), MPI_BYTE, 0, group);
  if (failed) {
    return status.ok() ? Status::IOError(path_ + ": the group's aggregator failed to read")
                       : status;
  }
  std::size_t at = 0;
  for (ReadRequest& r : requests) {
    std::memcpy(r.destination.data(), received.data() + at, r.destination.size());
    r.bytes_read = r.destination.size();
    r.status = Status::OK();
    at += r.destination.size();
  }
  return Status::OK();
}

Result<Options> ParseOptions(const PluginOptions& opts) {
  Options out;
  IOMIMIC_ASSIGN_OR_RETURN(out.mode, opts.GetChoice("mode", Mode::kIndependent,
                                                    {{"independent", Mode::kIndependent},
                                                     {"collective", Mode::kCollective},
                                                     {"aggregator", Mode::kAggregator}}));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t group, opts.GetInt("group_size", 2));
  if (group < 1)
    return Status::InvalidArgument(opts.owner() + ": option 'group_size' must be >= 1");
  out.group_size = static_cast<int>(group);
  for (const char* hint : {"cb_nodes", "cb_buffer_size", "romio_cb_read"}) {
    IOMIMIC_ASSIGN_OR_RETURN(std::string v, opts.GetString(hint, ""));
    if (!v.empty()) out.hints[hint] = v;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Storage>> CreateMpiioStorage(const PluginContext& context) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return Status::NotSupported("mpiio: MPI was finalised in this process");
  if (!initialized) {
    // A process started alone (iomimic does not initialise MPI for a world
    // of one): MPI-IO needs it, so it starts here, as a singleton; the
    // process finalises it at exit.
    int ignored = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &ignored) != MPI_SUCCESS) {
      return Status::IOError("mpiio: MPI_Init_thread failed");
    }
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  IOMIMIC_ASSIGN_OR_RETURN(Options options, ParseOptions(context.options));
  if (options.mode == Mode::kIndependent && provided < MPI_THREAD_MULTIPLE) {
    return Status::NotSupported(
        "mpiio: independent reads from several reader threads need MPI_THREAD_MULTIPLE");
  }
  return std::unique_ptr<Storage>(new MpiioStorage(options));
}

}  // namespace iomimic::mpiio

namespace {
const IomimicOptionSpec kMpiioOptions[] = {
    {"mode", "string", "independent",
     "independent, collective (read_at_all per step) or aggregator"},
    {"group_size", "int", "2", "aggregator mode: ranks per group; one reads for all"},
    {"cb_nodes", "string", "", "MPI-IO hint: collective buffering aggregators"},
    {"cb_buffer_size", "string", "", "MPI-IO hint: collective buffer size in bytes"},
    {"romio_cb_read", "string", "", "MPI-IO hint: enable, disable or automatic"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("mpiio", "1.0.0",
                              "MPI-IO on shared files: independent, collective or aggregated reads",
                              iomimic::mpiio::kCapabilities, kMpiioOptions,
                              &iomimic::mpiio::CreateMpiioStorage);
