#include "engine/generator.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "metrics/records.h"

namespace iomimic::engine {

std::string TemporaryPath(const std::string& path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".iomimic-partial";
}

namespace {

enum class Outcome { kWritten, kSkipped };

Result<Outcome> GenerateOne(Session& session, std::uint64_t global_index) {
  Storage& storage = session.storage();
  Format& format = session.format();
  FileSpec spec = session.layout().Spec(global_index, session.element_type());
  const std::string& path = spec.path;

  Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
  Result<FileInfo> existing = storage.Stat(path);
  if (existing.ok()) {
    if (existing->is_directory) {
      return Status::AlreadyExists(path + " is a directory; refusing to generate over it");
    }
    if (!expected.ok() || existing->size == *expected) return Outcome::kSkipped;
    return Status::AlreadyExists(
        path + " exists with " + std::to_string(existing->size) + " bytes, but this manifest makes " +
        std::to_string(*expected) +
        "-byte files; refusing to overwrite it (remove the old dataset or set "
        "dataset.data_folder to another folder)");
  } else if (!existing.status().IsNotFound()) {
    return existing.status();
  }

  const std::string partial = TemporaryPath(path);
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.hint = AccessHint::kSequential;
  options.expected_size = expected.ok() ? *expected : 0;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(partial, options));
  Status written = format.WriteFile(storage, *file, spec);
  Status closed = file->Close();
  file.reset();
  if (written.ok()) written = closed;
  if (written.ok()) written = storage.Rename(partial, path);
  if (!written.ok()) {
    (void)storage.Remove(partial);  // our own partial file, never the user's
    return written.WithContext("generating " + path + " (format '" + format.name() + "')");
  }
  return Outcome::kWritten;
}

}  // namespace

Result<GenerateReport> Generate(Session& session, unsigned threads) {
  cluster::Cluster& cluster = session.cluster();
  const plan::DatasetLayout& layout = session.layout();
  GenerateReport report;
  metrics::Stamp start = metrics::Stamp::Now();
  IoSnapshot before = session.storage().Snapshot();

  Status status;
  if (cluster.rank() == 0) {
    for (const std::string& dir : layout.Directories()) {
      status = session.storage().CreateDirectories(dir);
      if (!status.ok()) break;
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));

  std::vector<std::uint64_t> mine = plan::FilesGeneratedBy(layout, cluster.rank(), cluster.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> written{0}, skipped{0};
  std::mutex error_mutex;
  Status first_error;
  auto worker = [&] {
    while (!failed.load()) {
      std::size_t i = next.fetch_add(1);
      if (i >= mine.size()) return;
      Result<Outcome> r = GenerateOne(session, mine[i]);
      if (!r.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = r.status();
        failed.store(true);
        return;
      }
      (*r == Outcome::kWritten ? written : skipped).fetch_add(1);
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(mine.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  report.files_written = written.load();
  report.files_skipped = skipped.load();
  report.bytes_written = (session.storage().Snapshot() - before).write_bytes;
  report.seconds = metrics::Seconds(start, metrics::Stamp::Now());
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(first_error));
  return report;
}

}  // namespace iomimic::engine
