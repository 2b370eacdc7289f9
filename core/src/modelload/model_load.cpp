#include "modelload/model_load.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "plan/checkpoint_plan.h"
#include "plan/safetensors.h"
#include "session/cache_honesty.h"
#include "session/interrupt.h"

namespace iomimic::modelload {
namespace {

using json = nlohmann::ordered_json;
using plan::DtypeName;
using plan::FileHead;
using plan::HeaderLength;
using plan::IndexJson;
using plan::LlamaTensors;
using plan::ParseHeader;
using plan::PlanShards;
using plan::Shard;
using plan::StoredTensor;
using plan::Tensor;

std::uint64_t NanosSince(std::chrono::steady_clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
}

// The files a load reads: the model's shards (planned, so they can be
// written) or the user's own files.
struct ModelFiles {
  std::vector<std::string> paths;
  std::vector<Shard> shards;  // empty for the user's files
  std::string folder;         // the model's folder ("" for the user's files)
};

Result<ModelFiles> PlanFiles(const config::Config& c) {
  ModelFiles files;
  if (!c.model_load.files.empty()) {
    for (const std::string& f : c.model_load.files) {
      files.paths.push_back(session::ResolveDataPath(c, f));
    }
    return files;
  }
  IOMIMIC_ASSIGN_OR_RETURN(const std::vector<Tensor> tensors, LlamaTensors(c.model));
  files.shards =
      PlanShards(tensors, DtypeName(c.model.model_datatype),
                 plan::DatatypeBytes(c.model.model_datatype), c.model_load.max_shard_bytes);
  files.folder = session::ResolveDataPath(c, c.model_load.folder);
  for (const Shard& s : files.shards) files.paths.push_back(files.folder + "/" + s.name);
  return files;
}

// The first `n` bytes of `path` (fewer when the file is shorter).
Result<std::string> ReadPrefix(Storage& storage, const std::string& path, std::uint64_t n) {
  OpenOptions options;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(path, options));
  std::string text(n, '\0');
  IOMIMIC_ASSIGN_OR_RETURN(const std::size_t got,
                           file->ReadAt(0, std::as_writable_bytes(std::span(text))));
  (void)file->Close();
  text.resize(got);
  return text;
}

// Whether `path` already is `shard`: its size and its head. Through the
// back end itself, not counted as the run's I/O.
bool AlreadyWritten(Storage& storage, const std::string& path, const Shard& shard) {
  Result<FileInfo> info = storage.Stat(path);
  if (!info.ok() || info->size != shard.file_bytes()) return false;
  Result<std::string> prefix = ReadPrefix(storage, path, shard.data_offset());
  return prefix.ok() && *prefix == FileHead(shard);
}

// Writes `shard` as `path` through `path`.partial and a rename (on object
// storage under its name: the object appears when complete), so that a
// killed writer never leaves a file that looks complete; adds its size to
// *written.
Status WriteShard(Storage& storage, const std::string& path, const Shard& shard, const Buffer& fill,
                  std::uint64_t* written) {
  const bool objects = storage.capabilities().objects;
  const std::string partial = objects ? path : path + ".partial";
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.expected_size = shard.file_bytes();
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(partial, options));
  const std::string head = FileHead(shard);
  Status status = file->WriteAt(0, std::as_bytes(std::span(head)));
  for (std::uint64_t at = 0; status.ok() && at < shard.data_bytes;) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(fill.size(), shard.data_bytes - at));
    status = file->WriteAt(shard.data_offset() + at, std::span(fill.data(), n));
    at += n;
  }
  // Durable before it is renamed, and clean, so that a cold load can drop
  // its pages from the page cache (a dirty page cannot be dropped).
  if (status.ok()) status = file->Sync();
  if (!status.ok()) {
    (void)file->Abort();
    return status;
  }
  IOMIMIC_RETURN_IF_ERROR(file->Close());
  if (!objects) IOMIMIC_RETURN_IF_ERROR(storage.Rename(partial, path));
  *written += shard.file_bytes();
  return Status::OK();
}

// Writes the model's files that are missing or not the model's: file i by
// rank i mod ranks, the index by rank 0. Collective.
Status WriteMissing(session::Session& session, const ModelFiles& files, LoadFigures* f) {
  cluster::Cluster& cluster = session.cluster();
  session::CountingStorage& storage = session.storage();
  const metrics::Stamp start = metrics::Stamp::Now();
  Status status = storage.CreateDirectories(files.folder);
  Buffer fill = Buffer::AllocateHost(session.config().model_load.read_size, 4096);
  std::uint64_t x = 0x9e3779b97f4a7c15ULL;  // any bytes: a loader never looks at them
  for (std::size_t i = 0; i + 8 <= fill.size(); i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(fill.data() + i, &x, 8);
  }
  const auto rank = static_cast<std::size_t>(cluster.rank());
  const auto ranks = static_cast<std::size_t>(cluster.size());
  for (std::size_t i = rank; status.ok() && i < files.shards.size(); i += ranks) {
    if (AlreadyWritten(storage.uncounted(), files.paths[i], files.shards[i])) continue;
    status = WriteShard(storage, files.paths[i], files.shards[i], fill, &f->written_bytes);
    if (status.ok()) ++f->written_files;
  }
  if (status.ok() && rank == 0 && files.shards.size() > 1) {
    const std::string path = files.folder + "/model.safetensors.index.json";
    const std::string index = IndexJson(files.shards);
    Result<std::string> old = ReadPrefix(storage.uncounted(), path, index.size() + 1);
    if (!old.ok() || *old != index) {
      OpenOptions options;
      options.mode = OpenMode::kWrite;
      Result<std::unique_ptr<File>> file = storage.Open(path, options);
      status = file.ok() ? (*file)->WriteAt(0, std::as_bytes(std::span(index))) : file.status();
      if (status.ok()) status = (*file)->Close();
    }
  }
  f->write_seconds = metrics::Seconds(start, metrics::Stamp::Now());
  return cluster.AgreeOnStatus(status.WithContext("model loading: writing the model's files"));
}

// What the workers of one load share: the next piece of work, the first
// error, the counts.
struct LoadWork {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> bytes{0}, requests{0}, tensors{0}, files{0};
  std::mutex mutex;
  Status failed;
  std::uint64_t total = 0;

  void AddTo(LoadPass* pass) const {
    pass->bytes += bytes;
    pass->requests += requests;
    pass->tensors += tensors;
    pass->files += files;
  }

  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed.ok()) failed = s;
    next = total;  // the others stop at their next piece
  }
};

// A file's layout as its header says, checked against its size.
struct FileLayout {
  std::uint64_t file_bytes = 0;
  std::uint64_t data_offset = 0;
  std::vector<StoredTensor> tensors;
};

// Reads and parses `file`'s header: two requests (the length, the JSON).
Result<FileLayout> ReadHeader(File& file, const std::string& path, LoadPass* pass, LoadWork* work) {
  FileLayout layout;
  IOMIMIC_ASSIGN_OR_RETURN(layout.file_bytes, file.Size());
  unsigned char first8[8] = {};
  auto t0 = std::chrono::steady_clock::now();
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got,
                           file.ReadAt(0, std::as_writable_bytes(std::span(first8))));
  pass->request_ns.Record(NanosSince(t0));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t n,
                           HeaderLength(first8, got < 8 ? got : layout.file_bytes, path));
  std::string header(n, '\0');
  t0 = std::chrono::steady_clock::now();
  IOMIMIC_ASSIGN_OR_RETURN(got, file.ReadAt(8, std::as_writable_bytes(std::span(header))));
  pass->request_ns.Record(NanosSince(t0));
  if (got != n) {
    return Status::Corruption(path + ": offset " + std::to_string(8 + got) +
                              ": safetensors header: the file ends inside the header");
  }
  IOMIMIC_ASSIGN_OR_RETURN(layout.tensors, ParseHeader(header, layout.file_bytes, path));
  layout.data_offset = 8 + n;
  work->requests.fetch_add(2, std::memory_order_relaxed);
  work->bytes.fetch_add(8 + n, std::memory_order_relaxed);
  return layout;
}

// Reads [offset, offset + length) of `file` into `buffer` in requests of at
// most its size. Stops early on a signal.
Status ReadRange(File& file, const std::string& path, std::uint64_t offset, std::uint64_t length,
                 Buffer& buffer, LoadPass* pass, LoadWork* work) {
  while (length > 0 && session::InterruptSignal() == 0) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), length));
    const auto t0 = std::chrono::steady_clock::now();
    IOMIMIC_ASSIGN_OR_RETURN(const std::size_t got, file.ReadAt(offset, buffer.span().first(n)));
    pass->request_ns.Record(NanosSince(t0));
    if (got != n) {
      return Status::Corruption(path + ": offset " + std::to_string(offset + got) +
                                ": the file ends inside a tensor its header lists");
    }
    work->bytes.fetch_add(n, std::memory_order_relaxed);
    work->requests.fetch_add(1, std::memory_order_relaxed);
    offset += n;
    length -= n;
  }
  return Status::OK();
}

// Runs `body(worker)` on `workers` threads and joins them.
template <typename Body>
void OnThreads(std::uint64_t workers, Body body) {
  std::vector<std::thread> pool;
  for (std::uint64_t w = 0; w < workers; ++w) pool.emplace_back(body, w);
  for (std::thread& t : pool) t.join();
}

// Method tensors: each worker takes the next of `mine`, reads its header and
// then its tensors in file order.
Status LoadTensors(session::Session& session, const std::vector<std::string>& mine,
                   LoadPass* pass) {
  const config::ModelLoadConfig& m = session.config().model_load;
  LoadWork work;
  work.total = mine.size();
  OnThreads(std::min<std::uint64_t>(m.workers, std::max<std::size_t>(1, mine.size())),
            [&](std::uint64_t) {
              Result<Buffer> buffer = session.storage().Allocate(m.read_size);
              if (!buffer.ok()) return work.Fail(buffer.status());
              for (std::uint64_t k = work.next++; k < work.total; k = work.next++) {
                if (session::InterruptSignal() != 0) return;
                const std::string& path = mine[k];
                const auto t0 = std::chrono::steady_clock::now();
                OpenOptions options;
                options.hint = AccessHint::kSequential;
                Result<std::unique_ptr<File>> file = session.storage().Open(path, options);
                if (!file.ok()) return work.Fail(file.status());
                Result<FileLayout> layout = ReadHeader(**file, path, pass, &work);
                if (!layout.ok()) return work.Fail(layout.status());
                for (const StoredTensor& t : layout->tensors) {
                  Status s = ReadRange(**file, path, layout->data_offset + t.begin, t.end - t.begin,
                                       *buffer, pass, &work);
                  if (!s.ok()) return work.Fail(s);
                  work.tensors.fetch_add(1, std::memory_order_relaxed);
                }
                (void)(*file)->Close();
                pass->file_ns.Record(NanosSince(t0));
                work.files.fetch_add(1, std::memory_order_relaxed);
              }
            });
  work.AddTo(pass);
  return work.failed;
}

// One chunk of method chunks: read_size bytes (or the data's rest) of file
// `file`, and the tensors that start in it.
struct Chunk {
  std::size_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t tensors = 0;
};

// Every file's data region cut into chunks of `size`; this rank's share.
std::vector<Chunk> CutChunks(const std::vector<FileLayout>& layouts, std::uint64_t size, int rank,
                             int ranks, bool shard) {
  std::vector<Chunk> out;
  std::uint64_t global = 0;
  for (std::size_t f = 0; f < layouts.size(); ++f) {
    const FileLayout& l = layouts[f];
    std::size_t t = 0;
    for (std::uint64_t at = l.data_offset; at < l.file_bytes; at += size, ++global) {
      Chunk c{f, at, std::min(size, l.file_bytes - at), 0};
      while (t < l.tensors.size() && l.data_offset + l.tensors[t].begin < at + c.length) {
        ++c.tensors, ++t;
      }
      if (!shard ||
          global % static_cast<std::uint64_t>(ranks) == static_cast<std::uint64_t>(rank)) {
        out.push_back(c);
      }
    }
  }
  return out;
}

// Method chunks: every header (workers files at once), then this rank's
// chunks of every file, workers at once, each worker with its own handles.
Status LoadChunks(session::Session& session, const std::vector<std::string>& paths,
                  LoadPass* pass) {
  const config::ModelLoadConfig& m = session.config().model_load;
  const std::uint64_t workers = m.workers;
  std::vector<FileLayout> layouts(paths.size());
  LoadWork headers;
  headers.total = paths.size();
  OnThreads(std::min<std::uint64_t>(workers, std::max<std::size_t>(1, paths.size())),
            [&](std::uint64_t) {
              for (std::uint64_t k = headers.next++; k < headers.total; k = headers.next++) {
                Result<std::unique_ptr<File>> file = session.storage().Open(paths[k], {});
                if (!file.ok()) return headers.Fail(file.status());
                Result<FileLayout> layout = ReadHeader(**file, paths[k], pass, &headers);
                if (!layout.ok()) return headers.Fail(layout.status());
                layouts[k] = std::move(layout).value();
                (void)(*file)->Close();
                headers.files.fetch_add(1, std::memory_order_relaxed);
              }
            });
  headers.AddTo(pass);
  IOMIMIC_RETURN_IF_ERROR(headers.failed);
  const std::vector<Chunk> chunks = CutChunks(layouts, m.read_size, session.cluster().rank(),
                                              session.cluster().size(), m.split == "shard");
  // Each file's first request start and last byte, steady-clock ns.
  std::vector<std::atomic<std::int64_t>> first(paths.size()), last(paths.size());
  for (std::size_t f = 0; f < paths.size(); ++f) first[f] = INT64_MAX, last[f] = 0;
  LoadWork work;
  work.total = chunks.size();
  OnThreads(workers, [&](std::uint64_t) {
    Result<Buffer> buffer = session.storage().Allocate(m.read_size);
    if (!buffer.ok()) return work.Fail(buffer.status());
    std::vector<std::unique_ptr<File>> open(paths.size());
    for (std::uint64_t k = work.next++; k < work.total; k = work.next++) {
      if (session::InterruptSignal() != 0) break;
      const Chunk& c = chunks[k];
      if (open[c.file] == nullptr) {
        Result<std::unique_ptr<File>> file = session.storage().Open(paths[c.file], {});
        if (!file.ok()) return work.Fail(file.status());
        open[c.file] = std::move(file).value();
      }
      const std::int64_t t0 = std::chrono::steady_clock::now().time_since_epoch().count();
      std::int64_t seen = first[c.file].load();
      while (t0 < seen && !first[c.file].compare_exchange_weak(seen, t0)) {
      }
      Status s = ReadRange(*open[c.file], paths[c.file], c.offset, c.length, *buffer, pass, &work);
      if (!s.ok()) return work.Fail(s);
      work.tensors.fetch_add(c.tensors, std::memory_order_relaxed);
      const std::int64_t t1 = std::chrono::steady_clock::now().time_since_epoch().count();
      seen = last[c.file].load();
      while (t1 > seen && !last[c.file].compare_exchange_weak(seen, t1)) {
      }
    }
    for (std::unique_ptr<File>& f : open) {
      if (f != nullptr) (void)f->Close();
    }
  });
  for (std::size_t f = 0; f < paths.size(); ++f) {
    if (last[f] > 0) pass->file_ns.Record(static_cast<std::uint64_t>(last[f] - first[f]));
  }
  work.AddTo(pass);
  return work.failed;
}

// The files this rank reads in a load: with method tensors and split shard,
// every ranks-th file from its rank; else all of them.
std::vector<std::string> RankFiles(const config::ModelLoadConfig& m,
                                   const std::vector<std::string>& paths, int rank, int ranks) {
  if (m.method != "tensors" || m.split != "shard") return paths;
  std::vector<std::string> out;
  for (std::size_t i = static_cast<std::size_t>(rank); i < paths.size();
       i += static_cast<std::size_t>(ranks)) {
    out.push_back(paths[i]);
  }
  return out;
}

// One load, `cache` "cold" or "warm". Collective.
Result<LoadPass> LoadOnce(session::Session& session, const std::vector<std::string>& paths,
                          const std::string& cache) {
  const config::ModelLoadConfig& m = session.config().model_load;
  cluster::Cluster& cluster = session.cluster();
  const std::vector<std::string> mine = RankFiles(m, paths, cluster.rank(), cluster.size());
  LoadPass pass;
  pass.cache = cache;
  Storage& storage = session.storage().uncounted();
  if (cache == "cold") {
    // The back end drops the files' pages at open (OpenOptions::drop_cache);
    // through the back end itself: not the run's I/O.
    OpenOptions options;
    options.drop_cache = true;
    for (const std::string& path : mine) {
      Result<std::unique_ptr<File>> file = storage.Open(path, options);
      if (file.ok()) (void)(*file)->Close();
    }
  }
  if (storage.capabilities().objects) {
    pass.residency.why_not = "object storage keeps no page cache on the client";
  } else {
    pass.residency = session::MeasureResidency(mine);
  }
  cluster.Barrier();
  pass.start = metrics::Stamp::Now();
  Status status =
      m.method == "tensors" ? LoadTensors(session, mine, &pass) : LoadChunks(session, paths, &pass);
  pass.end = metrics::Stamp::Now();
  pass.seconds = metrics::Seconds(pass.start, pass.end);
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status.WithContext("model loading")));
  return pass;
}

std::vector<std::string> Caches(const std::string& cache) {
  if (cache == "both") return {"cold", "warm"};
  return {cache};
}

double Gb(std::uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }

}  // namespace

Result<LoadFigures> LoadModel(session::Session& session) {
  const config::Config& c = session.config();
  IOMIMIC_ASSIGN_OR_RETURN(const ModelFiles files, PlanFiles(c));
  LoadFigures f;
  f.own_files = files.shards.empty();
  if (!f.own_files) IOMIMIC_RETURN_IF_ERROR(WriteMissing(session, files, &f));
  f.model_files = files.paths.size();
  for (const Shard& s : files.shards) {
    f.model_bytes += s.file_bytes();
    f.model_tensors += s.tensors.size();
  }
  if (f.own_files) {
    for (const std::string& path : files.paths) {
      Result<FileInfo> info = session.storage().uncounted().Stat(path);
      if (!info.ok()) return info.status().WithContext("model loading: model_load.files");
      f.model_bytes += info->size;
    }
  }
  for (const std::string& cache : Caches(c.model_load.cache)) {
    if (session.cluster().BarrierMax(session::InterruptSignal()) != 0) break;
    IOMIMIC_ASSIGN_OR_RETURN(LoadPass pass, LoadOnce(session, files.paths, cache));
    f.passes.push_back(std::move(pass));
  }
  f.interrupted_by = session.cluster().BarrierMax(session::InterruptSignal());
  return f;
}

void LoadResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                            std::vector<output::EventEntry>* events) const {
  for (const LoadPass& p : local_.passes) {
    events->push_back({rank, "model_load_" + p.cache, 0, 0, output::SinceOrigin(origin, p.start),
                       output::SinceOrigin(origin, p.end), p.bytes});
  }
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> LoadResults::Histograms() const {
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> out;
  for (const LoadPass& p : local_.passes) {
    out.emplace_back("model_load_" + p.cache + "_file", p.file_ns);
    out.emplace_back("model_load_" + p.cache + "_request", p.request_ns);
  }
  return out;
}

Status LoadResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  merged_ = local_;
  const std::vector<std::uint64_t> written =
      cluster.SumU64s({local_.written_files, local_.written_bytes});
  merged_.written_files = written[0];
  merged_.written_bytes = written[1];
  merged_.write_seconds = cluster.MaxDouble(local_.write_seconds);
  for (LoadPass& p : merged_.passes) {
    const std::vector<std::uint64_t> sums =
        cluster.SumU64s({p.files, p.tensors, p.bytes, p.requests});
    p.files = sums[0], p.tensors = sums[1], p.bytes = sums[2], p.requests = sums[3];
    p.seconds = cluster.MaxDouble(p.seconds);
    std::vector<metrics::LatencyHistogram> h =
        metrics::MergeOverRanks({&p.file_ns, &p.request_ns}, cluster);
    p.file_ns = h[0];
    p.request_ns = h[1];
    const session::ResidencyTotals r = session::SumResidency(p.residency, cluster);
    p.resident_bytes = r.resident_bytes;
    p.residency_bytes = r.bytes;
    p.ranks_measured = r.ranks_measured;
    p.residency_verdict = session::ResidencyVerdict(r);
  }
  return Status::OK();
}

void LoadResults::AddToSummary(const output::RunResults& run,
                               const config::LoadedManifest& manifest, json& summary,
                               json& iomimic) const {
  (void)run, (void)iomimic;
  const config::ModelLoadConfig& m = manifest.config.model_load;
  const LoadFigures& f = merged_;
  json o;
  o["files"] = f.model_files;
  o["bytes"] = f.model_bytes;
  if (!f.own_files) o["tensors"] = f.model_tensors;
  o["own_files"] = f.own_files;
  o["method"] = m.method;
  o["workers"] = m.workers;
  o["read_size"] = m.read_size;
  o["split"] = m.split;
  o["written"] = {{"files", f.written_files},
                  {"bytes", f.written_bytes},
                  {"seconds", metrics::JsonNumber<json>(f.write_seconds)}};
  json loads = json::object();
  for (const LoadPass& p : f.passes) {
    json l;
    l["seconds"] = metrics::JsonNumber<json>(p.seconds);
    l["GB_per_second"] = metrics::JsonNumber<json>(p.seconds > 0 ? Gb(p.bytes) / p.seconds : 0.0);
    l["bytes"] = p.bytes;
    l["files"] = p.files;
    l["tensors"] = p.tensors;
    l["requests"] = p.requests;
    l["file_latency_ms"] = metrics::PercentilesJson<json>(p.file_ns, metrics::kResultQuantiles);
    l["request_latency_ms"] =
        metrics::PercentilesJson<json>(p.request_ns, metrics::kResultQuantiles);
    l["page_cache_before"] = {{"ranks_measured", p.ranks_measured},
                              {"bytes", p.residency_bytes},
                              {"resident_bytes", p.resident_bytes},
                              {"verdict", p.residency_verdict}};
    loads[p.cache] = std::move(l);
  }
  o["loads"] = std::move(loads);
  summary["model_load"] = std::move(o);
}

std::string LoadResults::ConsoleLines(const output::RunResults& run,
                                      const config::Config& config) const {
  (void)run;
  const LoadFigures& f = merged_;
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line, "  model load: %llu files, %.2f GB (%s, %llu workers, %s)%s\n",
      static_cast<unsigned long long>(f.model_files), Gb(f.model_bytes),
      config.model_load.method.c_str(), static_cast<unsigned long long>(config.model_load.workers),
      config.model_load.split.c_str(),
      f.written_files > 0 ? (", " + std::to_string(f.written_files) + " written first").c_str()
                          : "");
  out += line;
  for (const LoadPass& p : f.passes) {
    std::snprintf(line, sizeof line,
                  "  model load (%s): %.2f GB in %.3f s: %.2f GB/s; file p50 %.1f ms, max %.1f "
                  "ms; page cache before: %s\n",
                  p.cache.c_str(), Gb(p.bytes), p.seconds,
                  p.seconds > 0 ? Gb(p.bytes) / p.seconds : 0.0, p.file_ns.Percentile(0.5) / 1e6,
                  static_cast<double>(p.file_ns.max_ns()) / 1e6, p.residency_verdict.c_str());
    out += line;
  }
  return out;
}

Result<std::shared_ptr<output::WorkflowResults>> RunModelLoad(
    session::Session& session, const output::WorkflowContext& context) {
  (void)context;
  return output::ResultsOf<LoadResults>(LoadModel(session));
}

const output::FigureList& Figures() {
  static const output::FigureList figures = {
      {"model load cold s", {"model_load", "loads", "cold", "seconds"}, false},
      {"model load cold GB/s", {"model_load", "loads", "cold", "GB_per_second"}, true},
      {"model load warm s", {"model_load", "loads", "warm", "seconds"}, false},
      {"model load warm GB/s", {"model_load", "loads", "warm", "GB_per_second"}, true},
  };
  return figures;
}

}  // namespace iomimic::modelload
