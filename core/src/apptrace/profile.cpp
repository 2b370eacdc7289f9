// ProfileTrace (apptrace/profile.h): one walk over the trace's operations
// for the data files' opens and reads, one per reader thread for the
// rhythm, one for the files written (docs/derive.md, "The profile").

#include "apptrace/profile.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string_view>

#include "config/dlio_compat.h"

namespace iomimic::apptrace {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string ExtensionOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string ParentOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// Code, libraries, configuration and system files: never the data set.
bool IsCodeOrSystem(const std::string& path) {
  static constexpr const char* kPrefixes[] = {"/usr/", "/lib/",  "/lib64/", "/bin/", "/sbin/",
                                              "/etc/", "/proc/", "/sys/",   "/dev/", "/run/"};
  for (const char* p : kPrefixes) {
    if (StartsWith(path, p)) return true;
  }
  for (const char* part : {"/site-packages/", "/dist-packages/", "/__pycache__/", "/lib/python"}) {
    if (path.find(part) != std::string::npos) return true;
  }
  if (path.find(".so.") != std::string::npos) return true;
  const std::string ext = ExtensionOf(path);
  return ext == "py" || ext == "pyc" || ext == "so" || ext == "pth" || ext == "yaml" ||
         ext == "yml" || ext == "cfg" || ext == "ini" || ext == "conf";
}

// Files an application writes that are not checkpoints: results and logs.
bool IsResultsFile(const std::string& path) {
  static constexpr std::string_view kExtensions = " json csv log txt html yaml pfw gz out err ";
  const std::string ext = ExtensionOf(path);
  return !ext.empty() && kExtensions.find(" " + ext + " ") != std::string_view::npos;
}

bool Under(const std::string& path, const std::string& dir) {
  if (dir.empty()) return true;
  return path.size() > dir.size() && StartsWith(path, dir.c_str()) && path[dir.size()] == '/';
}

template <typename T>
double Median(std::vector<T> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? static_cast<double>(v[n / 2])
                    : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

// The bytes covered by `ranges` (offset, end), merged.
std::uint64_t Covered(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t total = 0, end = 0;
  bool any = false;
  for (const auto& [from, to] : ranges) {
    if (!any || from > end) {
      total += to - from;
      end = to;
      any = true;
    } else if (to > end) {
      total += to - end;
      end = to;
    }
  }
  return total;
}

// The folder holding the data set: the folder of the most bytes read, or
// its parent when sibling folders hold files of the same extension.
std::string InferDataDir(const AppTrace& trace, const std::vector<std::uint64_t>& bytes_by_file) {
  std::map<std::string, std::uint64_t> by_dir;
  for (std::size_t i = 0; i < trace.files.size(); ++i) {
    if (bytes_by_file[i] > 0) by_dir[ParentOf(trace.files[i].path)] += bytes_by_file[i];
  }
  std::string best;
  std::uint64_t most = 0;
  for (const auto& [dir, bytes] : by_dir) {
    if (bytes > most) best = dir, most = bytes;
  }
  if (best.empty()) return best;
  // Sibling folders of files with the extension of the best folder's: one
  // data set in subfolders.
  const std::string up = ParentOf(best);
  std::set<std::string> best_ext, siblings;
  for (std::size_t i = 0; i < trace.files.size(); ++i) {
    if (bytes_by_file[i] > 0 && ParentOf(trace.files[i].path) == best) {
      best_ext.insert(ExtensionOf(trace.files[i].path));
    }
  }
  for (std::size_t i = 0; i < trace.files.size(); ++i) {
    const std::string dir = ParentOf(trace.files[i].path);
    if (bytes_by_file[i] > 0 && dir != best && ParentOf(dir) == up && !up.empty() &&
        best_ext.count(ExtensionOf(trace.files[i].path)) > 0) {
      siblings.insert(dir);
    }
  }
  return siblings.empty() ? best : up;
}

// Where a pause ends a burst: over `min_gap_s` and over a quarter of the
// longest of `pauses` (so that the pauses of the program's compute split
// the bursts, and not the shorter stalls of its own code between calls).
double SplitThreshold(const std::vector<std::int64_t>& pauses, double min_gap_s) {
  const std::int64_t longest = pauses.empty() ? 0 : *std::max_element(pauses.begin(), pauses.end());
  return std::max(min_gap_s * 1e9, 0.25 * static_cast<double>(longest));
}

// The opens and reads of one pass over a file (its first reads, 1/passes
// of them), in time order, split at pauses over the step threshold. `ops`:
// the file's opens and reads that did not fail, thread after thread.
std::vector<TraceProfile::ScriptSample> ScriptOf(std::vector<const Op*> ops, unsigned passes,
                                                 double min_gap_s) {
  std::size_t reads = 0;
  for (const Op* op : ops) reads += op->kind == OpKind::kRead;
  std::stable_sort(ops.begin(), ops.end(),
                   [](const Op* a, const Op* b) { return a->start_ns < b->start_ns; });
  const std::size_t keep = std::max<std::size_t>(1, reads / std::max(1u, passes));
  std::vector<std::int64_t> pauses;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    pauses.push_back(ops[i]->start_ns - (ops[i - 1]->start_ns + ops[i - 1]->dur_ns));
  }
  const double threshold = SplitThreshold(pauses, min_gap_s);
  std::vector<TraceProfile::ScriptSample> script(1);
  std::size_t taken = 0;
  for (std::size_t i = 0; i < ops.size() && taken < keep; ++i) {
    if (i > 0 && static_cast<double>(pauses[i - 1]) > threshold && !script.back().reads.empty()) {
      script.emplace_back();
    }
    if (ops[i]->kind == OpKind::kOpen) {
      if (!script.back().reads.empty()) script.emplace_back();  // a new open, a new sample
      script.back().open = true;
    } else {
      script.back().reads.push_back(ops[i]->size);
      ++taken;
    }
  }
  return script;
}

// One profile in the making: the trace, the options, which files are data.
struct Walk {
  const AppTrace& trace;
  const ProfileOptions& options;
  TraceProfile& p;
  std::vector<int> data_index;  // per traced file: its index in p.files, or -1
  std::int64_t data_first = INT64_MAX, data_last = 0;
  std::map<std::string, std::uint64_t> ext_count;
};

// The data set: files that existed, were read, and are not code, under the
// data folder.
void SelectData(Walk& w) {
  const AppTrace& trace = w.trace;
  TraceProfile& p = w.p;
  const std::size_t nfiles = trace.files.size();
  // Candidates: files that existed, were read, and are not code.
  std::vector<std::uint64_t> read_by_file(nfiles, 0);
  for (const TracedThread& t : trace.threads) {
    for (const Op& op : t.ops) {
      if (op.kind == OpKind::kRead && !op.failed && op.file < nfiles)
        read_by_file[op.file] += op.size;
    }
  }
  for (std::size_t i = 0; i < nfiles; ++i) {
    const TracedFile& f = trace.files[i];
    if (!f.existed || f.is_directory || IsCodeOrSystem(f.path)) read_by_file[i] = 0;
  }
  std::string dir = w.options.data_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) dir = InferDataDir(trace, read_by_file);
  p.data_dir = dir;
  w.data_index.assign(nfiles, -1);
  for (std::size_t i = 0; i < nfiles; ++i) {
    if (read_by_file[i] > 0 && Under(trace.files[i].path, dir)) {
      w.data_index[i] = static_cast<int>(p.files.size());
      FileProfile& file = p.files.emplace_back();
      file.path = trace.files[i].path;
      file.size = trace.files[i].initial_size;
    }
  }
}

// Opens and reads of the data files: counts, bins, coverage, epochs.
void CountReads(Walk& w) {
  const AppTrace& trace = w.trace;
  TraceProfile& p = w.p;
  const std::size_t nfiles = trace.files.size();
  const std::vector<int>& data_index = w.data_index;
  // Opens and reads of the data files.
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges(p.files.size());
  std::map<std::uint32_t, std::uint64_t> handle_end;  // where each open instance's last read ended
  std::uint64_t whole_bytes = 0, sequential = 0;
  for (const TracedThread& t : trace.threads) {
    bool reads = false;
    for (const Op& op : t.ops) {
      if (op.file >= nfiles || data_index[op.file] < 0 || op.failed) continue;
      FileProfile& f = p.files[static_cast<std::size_t>(data_index[op.file])];
      w.data_first = std::min(w.data_first, op.start_ns);
      w.data_last = std::max(w.data_last, op.start_ns + op.dur_ns);
      if (op.kind == OpKind::kOpen) {
        ++f.opens;
        if (op.handle != 0) handle_end[op.handle] = 0;
      } else if (op.kind == OpKind::kRead) {
        reads = true;
        ++f.reads;
        f.bytes_read += op.size;
        f.largest_read = std::max(f.largest_read, op.size);
        ++p.read_bins[SizeBin(op.size)];
        ++p.read_sizes[op.size];
        if (op.size > 0)
          ranges[static_cast<std::size_t>(data_index[op.file])].push_back(
              {op.offset, op.offset + op.size});
        const auto it = handle_end.find(op.handle);
        if ((it != handle_end.end() && it->second == op.offset) ||
            (it == handle_end.end() && op.offset == 0)) {
          ++f.sequential_reads;
          ++sequential;
        }
        handle_end[op.handle] = op.offset + op.size;
        if (op.offset == 0 && f.size > 0 && op.size >= f.size) whole_bytes += op.size;
      }
    }
    if (reads) ++p.reader_threads;
  }
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    FileProfile& f = p.files[i];
    f.distinct_bytes = Covered(ranges[i]);
    p.read_ops += f.reads;
    p.read_bytes += f.bytes_read;
    p.distinct_bytes += f.distinct_bytes;
    p.opens += f.opens;
    p.dataset_bytes += f.size;
    ++w.ext_count[ExtensionOf(f.path)];
  }
  std::sort(p.files.begin(), p.files.end(),
            [](const FileProfile& a, const FileProfile& b) { return a.path < b.path; });
  p.epochs = p.distinct_bytes == 0
                 ? 1
                 : std::max(1u, static_cast<unsigned>(std::llround(
                                    static_cast<double>(p.read_bytes) / p.distinct_bytes)));
  p.bytes_per_epoch = static_cast<double>(p.read_bytes) / p.epochs;
  p.opens_per_file = p.files.empty() ? 0 : static_cast<double>(p.opens) / p.files.size() / p.epochs;
  p.sequential_share = p.read_ops ? static_cast<double>(sequential) / p.read_ops : 0;
  p.whole_file_share = p.read_bytes ? static_cast<double>(whole_bytes) / p.read_bytes : 0;
  for (const auto& [size, n] : p.read_sizes) {
    if (n > p.read_sizes[p.dominant_read] || p.dominant_read == 0) p.dominant_read = size;
  }
  if (p.read_ops > 0)
    p.dominant_share = static_cast<double>(p.read_sizes[p.dominant_read]) / p.read_ops;
  if (p.read_sizes[0] == 0) p.read_sizes.erase(0);
}

// A format by the first bytes of `path`, when it can be read here ("" =
// none known or not readable).
std::string FormatOfMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string head(512, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return config::DlioFormatOfMagic(head);
}

// The format: the first bytes of the first data file that can be read,
// else the most common extension. Each file's: by the first bytes of the
// first readable file of its extension, else by the extension.
void DetectFormat(Walk& w) {
  TraceProfile& p = w.p;
  std::map<std::string, std::uint64_t>& ext_count = w.ext_count;
  for (const auto& [ext, n] : ext_count) {
    if (p.extension.empty() || n > ext_count[p.extension]) p.extension = ext;
  }
  if (w.options.read_magic) {
    for (const FileProfile& f : p.files) {
      std::ifstream in(f.path, std::ios::binary);
      if (!in) continue;
      p.format = FormatOfMagic(f.path);
      if (!p.format.empty()) p.format_from = "the first bytes of " + f.path;
      break;
    }
  }
  if (p.format.empty()) {
    p.format = config::DlioFormatOfExtension(p.extension);
    if (!p.format.empty()) p.format_from = "the extension ." + p.extension;
  }
  std::map<std::string, std::string> by_extension;  // extension -> format
  for (FileProfile& f : p.files) {
    const std::string ext = ExtensionOf(f.path);
    auto it = by_extension.find(ext);
    if (it == by_extension.end() || (it->second.empty() && w.options.read_magic)) {
      std::string format = w.options.read_magic ? FormatOfMagic(f.path) : "";
      if (format.empty()) format = config::DlioFormatOfExtension(ext);
      if (it == by_extension.end()) {
        it = by_extension.emplace(ext, format).first;
      } else {
        it->second = format;
      }
    }
    f.format = it->second;
  }
}

// Each data file's read script (one pass, split at pauses), and as the
// data set's the one of the file of the median size (the first such) among
// the files of the most common samples a pass.
void Scripts(Walk& w) {
  const AppTrace& trace = w.trace;
  TraceProfile& p = w.p;
  if (p.files.empty()) return;
  std::map<std::string, std::size_t> by_path;  // p.files is sorted by path now
  for (std::size_t i = 0; i < p.files.size(); ++i) by_path[p.files[i].path] = i;
  std::vector<std::vector<const Op*>> ops(p.files.size());
  std::vector<int> profile_of(trace.files.size(), -1);  // traced file -> index in p.files
  for (std::size_t i = 0; i < trace.files.size(); ++i) {
    if (w.data_index[i] >= 0) profile_of[i] = static_cast<int>(by_path[trace.files[i].path]);
  }
  for (const TracedThread& t : trace.threads) {
    for (const Op& op : t.ops) {
      if ((op.kind == OpKind::kRead || op.kind == OpKind::kOpen) && !op.failed &&
          op.file < trace.files.size() && profile_of[op.file] >= 0) {
        ops[static_cast<std::size_t>(profile_of[op.file])].push_back(&op);
      }
    }
  }
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    FileProfile& f = p.files[i];
    // The file's own passes: a file that an epoch left out (a last partial
    // batch dropped, a sampler's subset) was read fewer times.
    f.passes = f.distinct_bytes == 0
                   ? 1
                   : std::clamp<unsigned>(
                         static_cast<unsigned>(std::llround(static_cast<double>(f.bytes_read) /
                                                            static_cast<double>(f.distinct_bytes))),
                         1, p.epochs);
    f.script = ScriptOf(std::move(ops[i]), f.passes, w.options.min_step_gap_s);
  }
  // The most common samples a pass (the fewer of equals): a pause inside
  // a few files' reads (the program stalled) does not make the data set's.
  std::map<std::size_t, std::size_t> counts;  // samples a pass -> files
  for (const FileProfile& f : p.files) ++counts[f.script.size()];
  std::size_t common = 0, most = 0;
  for (const auto& [samples, n] : counts) {
    if (n > most) common = samples, most = n;
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> by_size;
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    if (p.files[i].script.size() == common) by_size.push_back({p.files[i].size, i});
  }
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const FileProfile& median = p.files[by_size[by_size.size() / 2].second];
  p.script_file = median.path;
  p.script = median.script;
}

// The rhythm, per reader thread: bursts of data operations split by pauses
// over the step threshold.
void Rhythm(Walk& w) {
  const AppTrace& trace = w.trace;
  TraceProfile& p = w.p;
  const std::size_t nfiles = trace.files.size();
  const std::vector<int>& data_index = w.data_index;
  std::vector<double> gaps, step_times, samples, burst_bytes, files_moved, per_sample;
  // The bytes of one sample: the files' bytes a pass (their read scripts'),
  // on average, over the data set's samples a pass.
  double sample_bytes = 0;
  for (const FileProfile& f : p.files) {
    for (const TraceProfile::ScriptSample& sample : f.script) {
      for (const std::uint64_t size : sample.reads) sample_bytes += static_cast<double>(size);
    }
  }
  if (!p.files.empty() && !p.script.empty()) {
    sample_bytes /= static_cast<double>(p.files.size()) * static_cast<double>(p.script.size());
  }
  for (const TracedThread& t : trace.threads) {
    std::vector<const Op*> ops;
    bool reads = false;
    for (const Op& op : t.ops) {
      if (op.file < nfiles && data_index[op.file] >= 0) {
        ops.push_back(&op);
        reads |= op.kind == OpKind::kRead;
      }
    }
    if (!reads || ops.empty()) continue;
    std::vector<std::int64_t> pauses;
    for (std::size_t i = 1; i < ops.size(); ++i) {
      pauses.push_back(ops[i]->start_ns - (ops[i - 1]->start_ns + ops[i - 1]->dur_ns));
    }
    const double threshold = SplitThreshold(pauses, w.options.min_step_gap_s);
    double paused = 0, thread_bytes = 0;
    std::int64_t burst_start = ops[0]->start_ns;
    double opens = 0, bytes = 0, moves = 0;
    std::uint32_t last_file = kNoFile;
    auto end_burst = [&] {
      ++p.steps;
      samples.push_back(opens);
      burst_bytes.push_back(bytes);
      files_moved.push_back(moves);
      opens = bytes = moves = 0;
      last_file = kNoFile;
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (i > 0 && static_cast<double>(pauses[i - 1]) > threshold) {
        end_burst();
        gaps.push_back(static_cast<double>(pauses[i - 1]) / 1e9);
        paused += static_cast<double>(pauses[i - 1]) / 1e9;
        step_times.push_back(static_cast<double>(ops[i]->start_ns - burst_start) / 1e9);
        burst_start = ops[i]->start_ns;
      }
      if (ops[i]->kind == OpKind::kRead && ops[i]->file != last_file) {
        ++moves;
        last_file = ops[i]->file;
      }
      if (ops[i]->kind == OpKind::kOpen && !ops[i]->failed) ++opens;
      if (ops[i]->kind == OpKind::kRead && !ops[i]->failed) {
        bytes += static_cast<double>(ops[i]->size);
        thread_bytes += static_cast<double>(ops[i]->size);
      }
    }
    end_burst();
    // The thread's compute per sample: its pauses over the samples it read.
    if (sample_bytes > 0) per_sample.push_back(paused / std::max(1.0, thread_bytes / sample_bytes));
  }
  p.compute_per_sample_s = Median(per_sample);
  p.step_gap_s = Median(gaps);
  p.step_time_s = Median(step_times);
  p.samples_per_burst = Median(samples);
  p.read_bytes_per_burst = Median(burst_bytes);
  p.files_per_burst = Median(files_moved);
}

// Files created and written outside the data set, renames followed.
void Writes(Walk& w) {
  const AppTrace& trace = w.trace;
  TraceProfile& p = w.p;
  const std::size_t nfiles = trace.files.size();
  std::map<std::uint32_t, std::size_t> index;  // file -> index in `files`
  std::vector<WrittenFile> files;
  std::vector<std::vector<std::uint64_t>> sizes;  // each file's writes
  for (const TracedThread& t : trace.threads) {
    for (const Op& op : t.ops) {
      if (op.failed || op.file >= nfiles || w.data_index[op.file] >= 0) continue;
      if (op.kind == OpKind::kWrite) {
        auto [it, fresh] = index.emplace(op.file, files.size());
        if (fresh) {
          files.push_back({trace.files[op.file].path, 0, 0, 0, false, op.start_ns});
          sizes.emplace_back();
        }
        files[it->second].bytes += op.size;
        ++files[it->second].writes;
        sizes[it->second].push_back(op.size);
      } else if (op.kind == OpKind::kSync) {
        const auto it = index.find(op.file);
        if (it != index.end()) ++files[it->second].syncs;
      } else if (op.kind == OpKind::kRename && op.file2 < nfiles) {
        const auto it = index.find(op.file);
        if (it != index.end()) {
          files[it->second].path = trace.files[op.file2].path;
          files[it->second].renamed = true;
        }
      }
    }
  }
  // By the final name: code, system, results and log files are not
  // checkpoints (a results file is often written under a temporary name).
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (IsCodeOrSystem(files[i].path) || IsResultsFile(files[i].path)) continue;
    p.write_ops += files[i].writes;
    p.write_bytes += files[i].bytes;
    p.syncs += files[i].syncs;
    for (const std::uint64_t size : sizes[i]) ++p.write_bins[SizeBin(size)];
    p.written.push_back(std::move(files[i]));
  }
  std::sort(p.written.begin(), p.written.end(),
            [](const WrittenFile& a, const WrittenFile& b) { return a.first_ns < b.first_ns; });
}

}  // namespace

unsigned SizeBin(std::uint64_t bytes) {
  return bytes <= 1 ? 0 : static_cast<unsigned>(std::bit_width(bytes) - 1);
}

std::string SizeBinName(unsigned bin) {
  auto words = [](std::uint64_t b) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, ++u;
    return std::to_string(b) + " " + kUnits[u];
  };
  if (bin == 0) return "0-1 B";
  return words(std::uint64_t{1} << bin) + "-" + words(std::uint64_t{1} << (bin + 1));
}

Result<TraceProfile> ProfileTrace(const AppTrace& trace, const ProfileOptions& options) {
  TraceProfile p;
  p.source = trace.source;
  Walk w{trace, options, p, {}, INT64_MAX, 0, {}};
  SelectData(w);
  CountReads(w);
  DetectFormat(w);
  Scripts(w);
  Rhythm(w);
  Writes(w);
  if (p.files.empty() && p.written.empty()) {
    return Status::InvalidArgument(trace.source + ": the trace reads no data file" +
                                   (p.data_dir.empty() ? std::string() : " under " + p.data_dir) +
                                   " and writes no file");
  }
  p.span_s = static_cast<double>(trace.span_ns()) / 1e9;
  const double data_span =
      w.data_last > w.data_first ? static_cast<double>(w.data_last - w.data_first) / 1e9 : 0;
  p.read_bytes_per_second = data_span > 0 ? static_cast<double>(p.read_bytes) / data_span : 0;
  return p;
}

}  // namespace iomimic::apptrace
