#include "train/generator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "metrics/records.h"
#include "session/interrupt.h"
#include "session/limits.h"

namespace iomimic::train {

std::string CompletenessRecordPath(const std::string& path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".iomimic-complete";
}

std::string TemporaryPath(const std::string& path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".iomimic-partial";
}

namespace {

// kRewritten: written again, over a file of iomimic's whose completeness
// record holds other generation parameters.
enum class Outcome { kWritten, kSkipped, kRewritten };

// Most bytes per collective write round of shared-file generation (per rank).
constexpr std::uint64_t kSharedChunk = std::uint64_t{32} << 20;

// Resume (issue 13, defect 8; docs/security.md). A data file under its
// final name is complete when it has the format's exact size or, for formats
// whose size depends on content (images, text, compressed arrays), when
// its completeness record holds its size. Data files are
// fsynced before the record is written and before the rename, so neither a
// crash nor a power loss leaves a short file that passes as complete.

// Opens `path` (without truncating it) and fsyncs it: the shared-file path,
// where the ranks' handles are closed already. Opened for writing, as
// MPI_File_sync refuses read-only handles.
Status SyncPath(Storage& storage, const std::string& path) {
  OpenOptions options;
  options.mode = OpenMode::kReadWrite;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(path, options));
  Status synced = file->Sync();
  Status closed = file->Close();
  return synced.ok() ? closed : synced;
}

constexpr std::string_view kRecordHeader = "iomimic completeness record 1\nsize ";
constexpr std::string_view kRecordHeader2 = "iomimic completeness record 2\nsize ";
constexpr std::uint64_t kRecordMaxBytes = 64 * 1024;

// The generation parameters that decide a file's bytes, one "key value"
// line each: the completeness record keeps them, so that a dataset
// generated again with other parameters is written again, never reused as
// it is (issue 31; DLIO rewrites its files). The path and the file's index
// are not among them: they name the file.
std::string GenerationParameters(const Format& format, const FileSpec& spec) {
  std::string text = "format " + format.name() + "\nshape ";
  for (std::size_t i = 0; i < spec.sample_shape.size(); ++i) {
    text += (i > 0 ? "," : "") + std::to_string(spec.sample_shape[i]);
  }
  text += "\ndtype " + spec.element_type.descr;
  text += "\nsamples " + std::to_string(spec.num_samples);
  text += "\nseed " + std::to_string(spec.seed);
  text += "\ncompression " + spec.compression + " " + std::to_string(spec.compression_level);
  text += "\ncontent " + std::to_string(static_cast<int>(spec.content.kind)) + " " +
          std::to_string(spec.content.compress_percentage) + " " +
          std::to_string(spec.content.dedupe_percentage);
  for (const auto& [key, value] : spec.parameters) {
    if (key == "generation_buffer_size") continue;  // how, not what, it writes
    text += "\nparameter " + key + "=" + value;
  }
  return text + "\n";
}

// The manifest keys behind a parameter line's key, for the message that
// says why files are written again.
std::string ManifestKeysOf(const std::string& key) {
  if (key == "shape") return "record_length_bytes / record_dims";
  if (key == "samples") return "num_samples_per_file";
  if (key == "dtype") return "record_element_type";
  if (key == "seed") return "the seed";
  if (key == "compression") return "compression";
  if (key == "content") return "iomimic.content";
  if (key == "format") return "format";
  return "dataset." + key;
}

// The first line of `was` and `now` that differs, as "<key> (<manifest
// keys>): <old> -> <new>".
std::string FirstChange(const std::string& was, const std::string& now) {
  std::istringstream a(was), b(now);
  std::string la, lb;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) return "";
    if (ga && gb && la == lb) continue;
    const std::string line = ga ? la : lb;
    const std::size_t space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string old_value = ga ? la.substr(std::min(la.size(), space + 1)) : "(none)";
    std::string new_value = gb ? lb.substr(std::min(lb.size(), lb.find(' ') + 1)) : "(none)";
    if (key == "parameter") {
      key = old_value.substr(0, old_value.find('='));
    }
    return key + " (" + ManifestKeysOf(key) + "): " + old_value + " -> " + new_value;
  }
}

// Where the completeness record of the data file `path` lives: beside it
// (".<name>.iomimic-complete") on a file system; on object storage under a
// sibling prefix of the data folder ("<data_folder>.iomimic-records/<path
// below the folder>"), so that a reader listing the dataset's prefix, as
// DLIO's S3 readers do, finds only data objects.
std::string RecordPathOf(session::Session& session, const std::string& path) {
  const std::string& folder = session.layout().data_folder();
  if (session.storage().capabilities().objects && !folder.empty() &&
      path.size() > folder.size() + 1 && path.compare(0, folder.size(), folder) == 0 &&
      path[folder.size()] == '/') {
    return folder + ".iomimic-records" + path.substr(folder.size());
  }
  return CompletenessRecordPath(path);
}

// Writes the completeness record `record` of a file of `size` bytes (synced
// already) with its generation parameters. Records are iomimic's own
// bookkeeping: callers write them through the storage below the counting
// layer (CountingStorage::uncounted), so that a run's I/O figures are the
// workload's. `durable`: temporary name,
// fsync, rename, as formats without a predictable size need (the record is
// what makes their file complete); otherwise written in place, as a file of
// the format's exact size is complete by its size, and a record lost or torn
// by a crash only means no parameters to compare.
Status WriteCompletenessRecord(Storage& storage, const std::string& record, std::uint64_t size,
                               const std::string& parameters, bool durable = true) {
  const std::string partial = durable ? TemporaryPath(record) : record;
  const std::string text = std::string(kRecordHeader2) + std::to_string(size) + "\n" + parameters;
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.expected_size = text.size();
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(partial, options));
  Status s = file->WriteAt(0, std::as_bytes(std::span(text.data(), text.size())));
  if (s.ok() && durable) s = file->Sync();
  Status closed = file->Close();
  file.reset();
  if (s.ok()) s = closed;
  if (s.ok() && durable) s = storage.Rename(partial, record);
  if (!s.ok()) {
    (void)storage.Remove(partial);  // our own temporary file (or record)
    return s.WithContext("writing the completeness record " + record);
  }
  return Status::OK();
}

// A completeness record as read back: the size iomimic wrote and, from
// record version 2 on, the generation parameters.
struct CompletenessRecord {
  std::uint64_t size = 0;
  std::optional<std::string> parameters;
};

// The record at `record`, or nullopt when there is none (or one that does
// not parse).
Result<std::optional<CompletenessRecord>> ReadCompletenessRecord(Storage& storage,
                                                                 const std::string& record) {
  using Found = std::optional<CompletenessRecord>;
  Result<FileInfo> info = storage.Stat(record);
  if (!info.ok()) {
    if (info.status().IsNotFound()) return Found();
    return info.status();
  }
  if (info->is_directory || info->size > kRecordMaxBytes) return Found();
  OpenOptions options;
  options.mode = OpenMode::kRead;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(record, options));
  std::string text(static_cast<std::size_t>(info->size), '\0');
  Result<std::size_t> got = file->ReadAt(0, std::as_writable_bytes(std::span(text)));
  (void)file->Close();
  if (!got.ok()) return got.status().WithContext("reading the completeness record " + record);
  text.resize(*got);
  const bool v2 = text.starts_with(kRecordHeader2);
  if (!v2 && !text.starts_with(kRecordHeader)) return Found();
  const std::string rest = text.substr(kRecordHeader.size());  // both headers have one length
  char* end = nullptr;
  const unsigned long long value = std::strtoull(rest.c_str(), &end, 10);
  if (end == rest.c_str() || *end != '\n') return Found();
  CompletenessRecord out;
  out.size = value;
  if (v2) out.parameters = std::string(end + 1);
  return Found(out);
}

// What to do with `spec`'s file: kWritten (write it: absent, or complete but
// missing a companion file such as an index), kRewritten (iomimic's own
// file, by its completeness record, made with other generation parameters:
// `why` receives the first change), kSkipped (complete, same parameters),
// or an error when a file is there that cannot be trusted (never
// overwritten).
Result<Outcome> DecideExisting(session::Session& session, const FileSpec& spec, std::string* why) {
  Storage& storage = session.storage();
  Format& format = session.format();
  const std::string& path = spec.path;
  Result<FileInfo> existing = storage.Stat(path);
  if (!existing.ok()) {
    if (existing.status().IsNotFound()) return Outcome::kWritten;
    return existing.status();
  }
  if (existing->is_directory) {
    return Status::AlreadyExists(path + " is a directory; refusing to generate over it");
  }
  const std::string keep =
      "; refusing to overwrite it (remove it to regenerate it, or set dataset.data_folder to "
      "another folder)";
  const std::string record = RecordPathOf(session, path);
  IOMIMIC_ASSIGN_OR_RETURN(std::optional<CompletenessRecord> recorded,
                           ReadCompletenessRecord(session.storage().uncounted(), record));
  if (recorded && recorded->parameters) {
    const std::string now = GenerationParameters(format, spec);
    if (*recorded->parameters != now) {
      *why = FirstChange(*recorded->parameters, now);
      return Outcome::kRewritten;
    }
  }
  Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
  // An object under its final name was written whole (StorageCapabilities::
  // objects): it is complete when its size is the format's, or, for formats
  // without an exact size, because it exists.
  const bool objects = storage.capabilities().objects;
  if (objects && !expected.ok()) {
    // nothing more to check for the file itself
  } else if (expected.ok()) {
    if (existing->size != *expected) {
      return Status::AlreadyExists(path + " exists with " + std::to_string(existing->size) +
                                   " bytes, but this manifest makes " + std::to_string(*expected) +
                                   "-byte files" + keep);
    }
  } else {
    if (!recorded) {
      return Status::AlreadyExists(
          path + " exists without a completeness record (" + record + "; format '" + format.name() +
          "' files have no predictable size), so it may be cut short or not be iomimic's" + keep);
    }
    if (recorded->size != existing->size) {
      return Status::AlreadyExists(path + " has " + std::to_string(existing->size) +
                                   " bytes, but iomimic wrote " + std::to_string(recorded->size) +
                                   " (its completeness record): it was cut short or changed" +
                                   keep);
    }
  }
  for (const std::string& companion : format.CompanionPaths(spec)) {
    Result<FileInfo> c = storage.Stat(companion);
    if (!c.ok()) {
      if (c.status().IsNotFound()) return Outcome::kWritten;  // regenerate data and companions
      return c.status();
    }
  }
  return Outcome::kSkipped;
}

// Before writing a file again over iomimic's own (kRewritten): its record
// goes first, then the file, so that a crash midway leaves no old file
// under a record, or a record, that could pass as the new one.
Status RemoveStale(session::Session& session, const std::string& path) {
  Storage& storage = session.storage();
  Status s = session.storage().uncounted().Remove(RecordPathOf(session, path));
  if (s.ok() || s.IsNotFound()) s = storage.Remove(path);
  if (s.IsNotFound()) s = Status::OK();
  return s.WithContext("removing " + path + ", generated with other parameters");
}

// Writes (or skips) one file. `why` receives the first changed generation
// parameter of a file written again (kRewritten).
Result<Outcome> GenerateOne(session::Session& session, std::uint64_t global_index,
                            std::string* why) {
  Storage& storage = session.storage();
  Format& format = session.format();
  FileSpec spec = session.layout().Spec(global_index, session.element_type());
  const std::string& path = spec.path;

  IOMIMIC_ASSIGN_OR_RETURN(const Outcome outcome, DecideExisting(session, spec, why));
  if (outcome == Outcome::kSkipped) return outcome;
  if (outcome == Outcome::kRewritten) IOMIMIC_RETURN_IF_ERROR(RemoveStale(session, path));
  const std::string record = RecordPathOf(session, path);
  // Records are iomimic's bookkeeping, not the workload's I/O: not counted.
  Storage& records = session.storage().uncounted();
  Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
  const std::string parameters = GenerationParameters(format, spec);

  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.hint = AccessHint::kSequential;
  options.expected_size = expected.ok() ? *expected : 0;
  if (storage.capabilities().objects) {
    // Written under its final name: it appears whole when Close succeeds,
    // and not at all when the write is abandoned.
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(path, options));
    Status written = format.WriteFile(storage, *file, spec);
    if (written.ok()) {
      written = file->Close();
    } else {
      (void)file->Abort();
    }
    // Its record after it: an object without one is complete by existing,
    // and written again only when a record says other parameters.
    if (written.ok()) {
      Result<FileInfo> info = storage.Stat(path);
      written = info.ok() ? WriteCompletenessRecord(records, record, info->size, parameters, false)
                          : info.status();
    }
    if (!written.ok()) {
      return written.WithContext("generating " + path + " (format '" + format.name() + "')");
    }
    return outcome;
  }
  const std::string partial = TemporaryPath(path);
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(partial, options));
  Status written = format.WriteFile(storage, *file, spec);
  if (written.ok()) written = file->Sync();  // durable before it gets its final name
  Status closed = file->Close();
  file.reset();
  if (written.ok()) written = closed;
  // A file without a predictable size is complete by its record: durable,
  // before the file takes its name. Another keeps its parameters in one
  // written after, in place (WriteCompletenessRecord).
  if (written.ok() && !expected.ok()) {
    Result<FileInfo> info = storage.Stat(partial);
    written = info.ok() ? WriteCompletenessRecord(records, record, info->size, parameters)
                        : info.status();
  }
  if (written.ok()) written = storage.Rename(partial, path);
  if (written.ok() && expected.ok()) {
    written = WriteCompletenessRecord(records, record, *expected, parameters, false);
  }
  if (!written.ok()) {
    (void)storage.Remove(partial);  // our own partial file, never the user's
    return written.WithContext("generating " + path + " (format '" + format.name() + "')");
  }
  return outcome;
}

// Decides, on rank 0, what to do with a file that may exist already: the
// same rules as GenerateOne. Every rank gets the answer or the error.
Result<Outcome> DecideShared(session::Session& session, const FileSpec& spec, std::string* why) {
  cluster::Cluster& cluster = session.cluster();
  Status status;
  std::string verdict = "write";
  if (cluster.rank() == 0) {
    Result<Outcome> decided = DecideExisting(session, spec, why);
    if (!decided.ok()) {
      status = decided.status();
    } else if (*decided == Outcome::kSkipped) {
      verdict = "skip";
    } else if (*decided == Outcome::kRewritten) {
      verdict = "rewrite";
      status = RemoveStale(session, spec.path);
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  const std::string agreed = cluster.Broadcast(verdict);
  return agreed == "skip"      ? Outcome::kSkipped
         : agreed == "rewrite" ? Outcome::kRewritten
                               : Outcome::kWritten;
}

// Rank 0 writes the frame of the file under its temporary name; every rank
// learns the payload layout.
Result<PayloadLayout> WriteSharedFrame(session::Session& session, const FileSpec& spec,
                                       const std::string& partial) {
  cluster::Cluster& cluster = session.cluster();
  Status status;
  PayloadLayout layout;
  if (cluster.rank() == 0) {
    OpenOptions options;
    options.mode = OpenMode::kWrite;
    Result<std::unique_ptr<File>> file = session.storage().Open(partial, options);
    if (file.ok()) {
      Result<PayloadLayout> framed = session.format().WriteFrame(session.storage(), **file, spec);
      Status closed = (*file)->Close();
      status = framed.ok() ? closed : framed.status();
      if (framed.ok()) layout = *framed;
    } else {
      status = file.status();
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  const std::string encoded = cluster.Broadcast(std::to_string(layout.payload_offset) + " " +
                                                std::to_string(layout.payload_bytes) + " " +
                                                std::to_string(layout.file_size));
  if (std::sscanf(encoded.c_str(), "%" SCNu64 " %" SCNu64 " %" SCNu64, &layout.payload_offset,
                  &layout.payload_bytes, &layout.file_size) != 3) {
    return Status::Internal("generation: bad payload layout from rank 0: " + encoded);
  }
  return layout;
}

// Every rank writes its slice of the payload: rank r the r-th of P equal
// parts (4 KiB multiples), in rounds of dataset.generation_buffer_size bytes
// (4 KiB to kSharedChunk; kSharedChunk when unset), one
// File::WriteAtAll per round on every rank. A per-round vote stops all ranks
// together when one fails.
Status WriteSharedPayload(session::Session& session, const FileSpec& spec,
                          const PayloadLayout& layout, const std::string& partial) {
  cluster::Cluster& cluster = session.cluster();
  const auto ranks = static_cast<std::uint64_t>(cluster.size());
  const auto rank = static_cast<std::uint64_t>(cluster.rank());
  constexpr std::uint64_t kUnit = 4096;
  const std::uint64_t part =
      ((layout.payload_bytes + ranks - 1) / ranks + kUnit - 1) / kUnit * kUnit;
  // Slice boundaries fall on 4 KiB multiples of the file, not of the payload
  // (a format header of a few hundred bytes), so no two ranks share a block.
  auto boundary = [&](std::uint64_t r) {
    if (r == 0) return std::uint64_t{0};
    const std::uint64_t at = layout.payload_offset + std::min(layout.payload_bytes, r * part);
    const std::uint64_t aligned = (at + kUnit - 1) / kUnit * kUnit - layout.payload_offset;
    return std::min(layout.payload_bytes, aligned);
  };
  const std::uint64_t begin = boundary(rank);
  const std::uint64_t end = rank + 1 == ranks ? layout.payload_bytes : boundary(rank + 1);
  std::uint64_t chunk = kSharedChunk;
  if (auto it = spec.parameters.find("generation_buffer_size"); it != spec.parameters.end()) {
    chunk = std::clamp<std::uint64_t>(std::strtoull(it->second.c_str(), nullptr, 10), kUnit,
                                      kSharedChunk);
  }
  chunk = std::min(chunk, std::max<std::uint64_t>(part, 1));
  // Every rank makes the same number of rounds: enough for the largest slice
  // (at most part + kUnit bytes after alignment).
  const std::uint64_t rounds = (part + kUnit + chunk - 1) / chunk;

  OpenOptions options;
  options.mode = OpenMode::kReadWrite;
  options.hint = AccessHint::kSequential;
  Result<std::unique_ptr<File>> opened = session.storage().Open(partial, options);
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(opened.status()));
  std::unique_ptr<File> file = std::move(opened).value();
  Status status;
  Buffer buffer = Buffer::AllocateHost(static_cast<std::size_t>(chunk), 4096);
  if (buffer.empty() && chunk > 0) {
    status = Status::ResourceExhausted("generation: cannot allocate " + std::to_string(chunk) +
                                       " bytes");
  }
  for (std::uint64_t k = 0; k < rounds; ++k) {
    const std::uint64_t from = std::min(end, begin + k * chunk);
    const std::uint64_t to = std::min(end, from + chunk);
    std::span<std::byte> piece;
    if (status.ok() && to > from) {
      piece = buffer.span().first(static_cast<std::size_t>(to - from));
      status = session.format().FillPayload(spec, from, piece);
      if (!status.ok()) piece = {};
    }
    Status wrote = file->WriteAtAll(layout.payload_offset + from, piece);
    if (status.ok()) status = wrote;
    if (cluster.BarrierAnyFailed(!status.ok())) break;
  }
  Status closed = file->Close();  // collective on collective back ends
  file.reset();
  if (status.ok()) status = closed;
  return cluster.AgreeOnStatus(status);
}

// Writes one file with every rank (shared-file generation).
Result<Outcome> GenerateShared(session::Session& session, std::uint64_t global_index,
                               std::string* why) {
  cluster::Cluster& cluster = session.cluster();
  FileSpec spec = session.layout().Spec(global_index, session.element_type());
  IOMIMIC_ASSIGN_OR_RETURN(Outcome outcome, DecideShared(session, spec, why));
  if (outcome == Outcome::kSkipped) return outcome;
  const std::string partial = TemporaryPath(spec.path);
  Result<PayloadLayout> layout = WriteSharedFrame(session, spec, partial);
  Status status = layout.status();
  if (status.ok()) status = WriteSharedPayload(session, spec, *layout, partial);
  if (status.ok() && cluster.rank() == 0) {
    Result<FileInfo> info = session.storage().Stat(partial);
    if (!info.ok()) {
      status = info.status();
    } else if (info->size != layout->file_size) {
      status = Status::Internal(partial + " has " + std::to_string(info->size) +
                                " bytes after all ranks wrote their parts, expected " +
                                std::to_string(layout->file_size));
    } else {
      status = SyncPath(session.storage(), partial);
      const std::string parameters = GenerationParameters(session.format(), spec);
      const bool sized = session.format().ExpectedFileSize(spec).ok();
      if (status.ok() && !sized) {
        status = WriteCompletenessRecord(session.storage().uncounted(),
                                         RecordPathOf(session, spec.path), info->size, parameters);
      }
      if (status.ok()) status = session.storage().Rename(partial, spec.path);
      if (status.ok() && sized) {
        status =
            WriteCompletenessRecord(session.storage().uncounted(), RecordPathOf(session, spec.path),
                                    info->size, parameters, false);
      }
    }
  }
  status = cluster.AgreeOnStatus(status);
  if (!status.ok()) {
    if (cluster.rank() == 0) (void)session.storage().Remove(partial);  // our own file
    return status.WithContext("generating " + spec.path + " with all ranks (format '" +
                              session.format().name() + "')");
  }
  return outcome;
}

}  // namespace

// Free space before generating (issue 13, defect 4): rank 0 estimates the
// bytes of the files still to write (the format's exact size where it has
// one, else samples x sample bytes) and refuses when the data folder's file
// system has less space or fewer inodes free. Files already present are
// counted (one stat each) only when the whole dataset would not fit.
Status CheckSpaceForGeneration(session::Session& session) {
  const plan::DatasetLayout& layout = session.layout();
  const std::uint64_t n = layout.num_generated_files();
  if (n == 0) return Status::OK();
  const FileSpec first = layout.Spec(0, session.element_type());
  double sample_bytes = static_cast<double>(session.element_type().size);
  for (std::uint64_t d : first.sample_shape) sample_bytes *= static_cast<double>(d);
  double per_file = sample_bytes * static_cast<double>(first.num_samples);
  if (Result<std::uint64_t> exact = session.format().ExpectedFileSize(first); exact.ok()) {
    per_file = static_cast<double>(*exact);
  }
  // Object stores: the local file system's free space says nothing.
  if (session.storage().capabilities().objects) return Status::OK();
  const session::SpaceFacts space = session::ReadSpaceFacts(layout.data_folder());
  if (!space.known) return Status::OK();
  std::uint64_t missing = n;
  if (per_file * static_cast<double>(n) > static_cast<double>(space.free_bytes) ||
      n > space.free_inodes) {
    missing = 0;
    for (std::uint64_t g = 0; g < n; ++g) {
      Result<FileInfo> info = session.storage().Stat(layout.Spec(g, session.element_type()).path);
      if (!info.ok()) ++missing;
    }
  }
  const config::DatasetConfig& d = session.config().dataset;
  const double free_bytes = static_cast<double>(space.free_bytes);
  // The limit of the key most likely at fault: samples per file when one
  // file alone does not fit, else the number of files.
  if (per_file > free_bytes && missing > 0) {
    const double samples = static_cast<double>(std::max<std::uint64_t>(1, first.num_samples));
    const double per_sample = per_file / samples;
    const auto limit =
        static_cast<std::uint64_t>(free_bytes / per_sample / static_cast<double>(missing));
    if (limit > 0 || first.num_samples > 1) {
      return session::CheckFreeSpace(layout.data_folder(), missing,
                                     per_file * static_cast<double>(missing), space,
                                     "dataset.num_samples_per_file", d.num_samples_per_file, limit);
    }
    // Not even one sample per file fits: the sample size is at fault.
    return session::CheckFreeSpace(
        layout.data_folder(), missing, per_file * static_cast<double>(missing), space,
        "dataset.record_length_bytes", static_cast<std::uint64_t>(d.record_length_bytes),
        static_cast<std::uint64_t>(free_bytes / samples / static_cast<double>(missing)));
  }
  // Files that can exist in all: those present and those that still fit.
  const std::uint64_t present = n - missing;
  const auto fit = static_cast<std::uint64_t>(free_bytes / std::max(1.0, per_file));
  const std::uint64_t possible = std::min(fit, space.free_inodes) + present;
  const std::uint64_t limit = possible > d.num_files_eval ? possible - d.num_files_eval : 0;
  return session::CheckFreeSpace(layout.data_folder(), missing,
                                 per_file * static_cast<double>(missing), space,
                                 "dataset.num_files_train", d.num_files_train, limit);
}

Result<GenerateReport> Generate(session::Session& session, unsigned threads,
                                std::optional<GenerateReport>* so_far) {
  cluster::Cluster& cluster = session.cluster();
  const plan::DatasetLayout& layout = session.layout();
  GenerateReport report;
  metrics::Stamp start = metrics::Stamp::Now();
  session::IoSnapshot before = session.storage().Snapshot();

  Status status;
  if (cluster.rank() == 0) status = CheckSpaceForGeneration(session);
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  if (cluster.rank() == 0) {
    for (const std::string& dir : layout.Directories()) {
      status = session.storage().CreateDirectories(dir);
      if (!status.ok()) break;
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));

  // Shared-file generation: on back ends that share files between ranks,
  // files the format can write in parts are written by all ranks together,
  // one after another; the others keep the round robin below.
  std::vector<std::uint64_t> mine;
  std::vector<std::uint64_t> shared;
  const bool share = cluster.size() > 1 && session.storage().capabilities().shared_files;
  for (std::uint64_t f : plan::FilesGeneratedBy(layout, 0, 1)) {
    const bool in_parts =
        share && session.format().CanWriteInParts(layout.Spec(f, session.element_type())).ok();
    if (in_parts) {
      shared.push_back(f);
    } else if (f % static_cast<std::uint64_t>(cluster.size()) ==
               static_cast<std::uint64_t>(cluster.rank())) {
      mine.push_back(f);
    }
  }
  // Live progress (session/progress.h): one relaxed add per file.
  session::ProgressBoard& board = session.progress();
  session::PhaseScope phase(board, session::RunPhase::kGenerate);
  board.files_done.store(0, std::memory_order_relaxed);
  board.files_total.store(shared.size() + mine.size(), std::memory_order_relaxed);
  for (std::uint64_t f : shared) {
    std::string why;
    Result<Outcome> r = GenerateShared(session, f, &why);
    if (!r.ok()) return r.status();
    board.files_done.fetch_add(1, std::memory_order_relaxed);
    if (cluster.rank() == 0) {
      (*r == Outcome::kSkipped ? report.files_skipped : report.files_written) += 1;
      if (*r != Outcome::kSkipped) report.files_written_by_all_ranks += 1;
      if (*r == Outcome::kRewritten) {
        report.files_rewritten += 1;
        if (report.rewrite_reason.empty()) report.rewrite_reason = why;
      }
    }
  }

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> written{0}, skipped{0}, rewritten{0};
  std::mutex error_mutex;
  Status first_error;
  auto worker = [&] {
    while (!failed.load()) {
      if (const int signal = session::InterruptSignal(); signal != 0) {  // interrupt.h
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) {
          first_error = Status::Aborted(std::string("generation interrupted by ") +
                                        session::SignalName(signal) +
                                        " (files written so far are complete; run again to "
                                        "resume)");
        }
        failed.store(true);
        return;
      }
      std::size_t i = next.fetch_add(1);
      if (i >= mine.size()) return;
      std::string why;
      Result<Outcome> r = GenerateOne(session, mine[i], &why);
      if (!r.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = r.status();
        failed.store(true);
        return;
      }
      (*r == Outcome::kSkipped ? skipped : written).fetch_add(1);
      if (*r == Outcome::kRewritten && rewritten.fetch_add(1) == 0) {
        std::lock_guard<std::mutex> lock(error_mutex);
        report.rewrite_reason = why;
      }
      board.files_done.fetch_add(1, std::memory_order_relaxed);
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(mine.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  report.files_written += written.load();
  report.files_skipped += skipped.load();
  report.files_rewritten += rewritten.load();
  report.bytes_written = (session.storage().Snapshot() - before).write_bytes;
  report.start = start;
  report.end = metrics::Stamp::Now();
  report.seconds = metrics::Seconds(start, report.end);
  if (so_far != nullptr) *so_far = report;
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(first_error));
  return report;
}

}  // namespace iomimic::train
