// DeriveManifest (apptrace/derive.h): each key's value and the comment
// that says where it came from (docs/derive.md, "What is inferred from
// what").

#include "apptrace/derive.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "config/dlio_compat.h"

namespace iomimic::apptrace {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Mib(double bytes) { return Fixed(bytes / (1024.0 * 1024.0), 2) + " MiB"; }

// Samples per step: a divisor of `total` no larger than `want` (at least 1),
// so that no epoch drops a last short batch.
std::uint64_t DividingBatch(std::uint64_t want, std::uint64_t total) {
  want = std::max<std::uint64_t>(1, want);
  if (total == 0) return want;
  for (std::uint64_t b = std::min(want, total); b > 1; --b) {
    if (total % b == 0) return b;
  }
  return 1;
}

template <typename T>
T MedianOf(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// dataset: the data files, their format, sizes and samples.
void DatasetSection(const TraceProfile& p, const std::string& name, std::ostream& y,
                    std::vector<std::string>* notes) {
  auto no = [&](const std::string& line) { notes->push_back(line); };
  const std::uint64_t files = p.files.size();
  const std::uint64_t spf = std::max<std::size_t>(1, p.script.size());
  std::vector<std::uint64_t> sizes;
  for (const FileProfile& f : p.files) sizes.push_back(f.size);
  const std::uint64_t median = MedianOf(sizes);
  const double mean =
      static_cast<double>(std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0})) /
      static_cast<double>(sizes.size());
  double var = 0;
  for (const std::uint64_t s : sizes) var += (s - mean) * (s - mean);
  const double stdev = std::sqrt(var / static_cast<double>(sizes.size()));
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  const std::string gen(config::kDerivedDataFormat);
  y << "dataset:\n  data_folder: data/" << name << "\n";
  if (p.format.empty()) {
    y << "  # the files' format: unknown (no known first bytes, extension '." << p.extension
      << "'); generated as " << gen << "\n";
    no("the files' format (no known magic bytes or extension): generated as " + gen);
  } else {
    y << "  # the files are " << p.format << " (by " << p.format_from << ")";
    if (p.format != gen) {
      y << "; generated as " << gen
        << ",\n  # since iomimic.read_script, not a format's reader, makes the reads";
      no("the files' contents: they are " + p.format + ", generated as " + gen +
         " (the read script makes the reads, so no reader parses them)");
    }
    y << "\n";
  }
  y << "  format: " << gen << "\n"
    << "  # " << files << " file(s) under " << p.data_dir << " were read (the data set)\n"
    << "  num_files_train: " << files << "\n"
    << "  # " << spf << " sample(s) a file: the reads of " << p.script_file << " paused "
    << (spf - 1) << " time(s) in a pass\n"
    << "  num_samples_per_file: " << spf << "\n"
    << "  # files of " << median << " bytes (the median; " << *lo << " to " << *hi
    << "), over the samples; generated a little larger (the format's headers)\n"
    << "  record_length_bytes: " << (median + spf - 1) / spf << "\n"
    << "  record_length_bytes_stdev: " << static_cast<std::uint64_t>(stdev / spf) << "\n\n";
  if (*hi != *lo) {
    no("the read script is the median file's: files of other sizes (" + std::to_string(*lo) +
       " to " + std::to_string(*hi) + " bytes) read as many bytes as it");
  }
}

// reader and train: threads, samples per step, epochs, compute.
void ReaderAndTrainSections(const TraceProfile& p, std::ostream& y,
                            std::vector<std::string>* notes) {
  auto no = [&](const std::string& line) { notes->push_back(line); };
  const std::uint64_t files = p.files.size();
  const std::uint64_t spf = std::max<std::size_t>(1, p.script.size());
  const std::uint64_t threads = std::max<unsigned>(1, p.reader_threads);
  // Several threads, each file opened once a pass: a file's samples are one
  // batch, so that one thread reads them (a batch is one worker's).
  const bool file_batches = threads > 1 && spf > 1 && p.opens_per_file < 1.5;
  const std::uint64_t want = file_batches ? spf : threads;
  const std::uint64_t batch = DividingBatch(want, files * spf);
  y << "reader:\n  data_loader: pytorch\n"
    << "  # " << p.reader_threads << " reader thread(s): " << p.reader_threads
    << " thread(s) issued reads of data files\n"
    << "  read_threads: " << threads << "\n"
    << "  # " << batch << " sample(s) a step: "
    << (file_batches ? "a file's samples, so that one thread reads each file (each was opened "
                       "once a pass)"
                     : "one per reader thread");
  if (batch != want) y << " (lowered to divide the " << files * spf << " samples)";
  y << "\n  batch_size: " << batch << "\n"
    << "  # the order: as the files are listed (a trace shows one order, not the rule)\n"
    << "  file_shuffle: off\n  sample_shuffle: off\n\n";
  no("the shuffle rule (one trace shows one order): files and samples read in order");

  y << "train:\n  # " << p.epochs << " epoch(s): the data files' bytes were read "
    << Fixed(p.distinct_bytes ? static_cast<double>(p.read_bytes) / p.distinct_bytes : 0, 2)
    << " times over\n  epochs: " << p.epochs << "\n";
  if (p.compute_per_sample_s > 0) {
    // The threads together read `threads` samples in a thread's compute per
    // sample: a step of `batch` samples takes batch / threads of it.
    const double compute =
        p.compute_per_sample_s * static_cast<double>(batch) / static_cast<double>(threads);
    y << "  # " << Fixed(compute, 4) << " s of compute a step: a reader thread's pauses between "
      << "its bursts of reads over\n  # the samples it read (" << Fixed(p.compute_per_sample_s, 4)
      << " s, median over the threads), x " << batch << " samples a step / " << threads
      << " threads\n  # (" << p.steps << " bursts, median pause " << Fixed(p.step_gap_s, 4)
      << " s)\n  computation_time: " << Fixed(compute, 4) << "\n";
  } else {
    y << "  # no pause between reads longer than the step threshold: no compute\n"
      << "  computation_time: 0\n";
    no("compute per step: the reads never paused longer than the step threshold");
  }
  y << "\n";
}

// checkpoint: what the created files' writes say.
void CheckpointSection(const TraceProfile& p, const std::string& name, std::ostream& y,
                       std::vector<std::string>* notes) {
  auto no = [&](const std::string& line) { notes->push_back(line); };
  const bool reads = !p.files.empty();
  const std::uint64_t files = p.files.size();
  const std::uint64_t spf = std::max<std::size_t>(1, p.script.size());
  std::vector<std::uint64_t> gaps;
  std::uint64_t syncs = 0;
  bool renamed = false;
  for (std::size_t i = 0; i < p.written.size(); ++i) {
    syncs += p.written[i].syncs;
    renamed |= p.written[i].renamed;
    if (i > 0)
      gaps.push_back(static_cast<std::uint64_t>(p.written[i].first_ns - p.written[i - 1].first_ns));
  }
  y << "checkpoint:\n  checkpoint_folder: checkpoints/" << name << "\n"
    << "  # "
    << (syncs > 0 ? "fsync before close: the trace synced them" : "no fsync: the trace synced none")
    << "\n  fsync: " << (syncs > 0 ? "True" : "False") << "\n"
    << "  # "
    << (renamed ? "written under a temporary name, then renamed into place"
                : "written under the final name")
    << "\n  atomic: " << (renamed ? "True" : "False") << "\n";
  if (!reads) {
    y << "  # " << p.written.size() << " checkpoint(s): one per created file\n"
      << "  num_checkpoints_write: " << p.written.size() << "\n  num_checkpoints_read: 0\n";
    if (!gaps.empty()) {
      y << "  # " << Fixed(MedianOf(gaps) / 1e9, 3)
        << " s between checkpoints: the median between their first writes\n"
        << "  time_between_checkpoints: " << Fixed(MedianOf(gaps) / 1e9, 3) << "\n";
    }
  } else {
    const std::uint64_t steps =
        std::max<std::uint64_t>(1, files * spf / std::max<std::uint64_t>(1, p.reader_threads));
    y << "  # one checkpoint every " << std::max<std::uint64_t>(1, steps / p.written.size())
      << " step(s): " << p.written.size() << " over the run\n"
      << "  steps_between_checkpoints: " << std::max<std::uint64_t>(1, steps / p.written.size())
      << "\n";
  }
  y << "\n";
  no("the checkpoint's layout: iomimic writes DLIO's model and optimizer files of "
     "model.model_size_bytes, not the traced write sizes");
}

}  // namespace

std::vector<std::string> ScriptEntries(const std::vector<TraceProfile::ScriptSample>& script) {
  std::vector<std::string> entries;
  std::size_t i = 0;
  while (i < script.size()) {
    std::size_t j = i;
    while (j < script.size() && script[j] == script[i]) ++j;
    std::string e = std::to_string(j - i) + ":" + (script[i].open ? " open" : "");
    const std::vector<std::uint64_t>& reads = script[i].reads;
    for (std::size_t k = 0; k < reads.size();) {
      std::size_t m = k;
      while (m < reads.size() && reads[m] == reads[k]) ++m;
      e += " " + std::to_string(reads[k]);
      if (m - k > 1) e += "*" + std::to_string(m - k);
      k = m;
    }
    entries.push_back(e);
    i = j;
  }
  return entries;
}

DerivedManifest DeriveManifest(const TraceProfile& p, const std::string& name) {
  DerivedManifest d;
  std::ostringstream y;
  auto no = [&](const std::string& line) { d.not_inferred.push_back(line); };
  const bool reads = !p.files.empty();
  const bool writes = !p.written.empty();

  y << "# Derived by `iomimic derive` from " << p.source << " (docs/derive.md).\n"
    << "# Each value's comment says what in the trace it was inferred from.\n"
    << "# Scale it: ++workload.dataset.num_files_train=N for more files (each reads as the\n"
    << "# traced ones did), mpirun -np K for more ranks (each reads its shard, as DLIO's\n"
    << "# loaders do), ++workload.train.epochs=E for more passes.\n"
    << "model:\n  name: " << name << "\n";
  std::vector<std::uint64_t> written_bytes;
  for (const WrittenFile& w : p.written) written_bytes.push_back(w.bytes);
  if (writes) {
    y << "  # " << MedianOf(written_bytes) << " bytes a checkpoint: the median bytes written to "
      << "one created file (" << Mib(static_cast<double>(p.write_bytes)) << " in " << p.write_ops
      << " writes)\n  model_size_bytes: " << MedianOf(written_bytes) << "\n";
  }
  y << "\nframework: pytorch\n\n";
  y << "workflow:\n  # " << (reads ? "the data set is made first" : "no data set to make")
    << "\n  generate_data: " << (reads ? "True" : "False") << "\n"
    << "  # "
    << (reads ? "the trace read " + std::to_string(p.files.size()) + " data file(s)"
              : std::string("the trace read no data file"))
    << "\n  train: " << (reads ? "True" : "False") << "\n";
  if (writes) {
    y << "  # " << p.written.size() << " file(s) created and written outside the data set\n"
      << "  checkpoint: True\n";
  }
  y << "\n";

  if (reads) {
    DatasetSection(p, name, y, &d.not_inferred);
    ReaderAndTrainSections(p, y, &d.not_inferred);
  }
  if (writes) CheckpointSection(p, name, y, &d.not_inferred);
  if (reads) {
    y << "iomimic:\n"
      << "  # the reads of each sample, in place of a format's: " << p.script_file
      << "'s reads of one pass,\n  # one entry per burst of reads (N: samples; open: the burst "
      << "opened the file;\n  # SIZE*K: K reads)\n"
      << "  read_script:\n";
    for (const std::string& e : ScriptEntries(p.script)) y << "    - \"" << e << "\"\n";
    y << "  # the run's own check of the data files opens them: off, so that opens per file\n"
      << "  # are the training's\n  cache_check_files: 0\n"
      << "  # each batch read by one thread, as a PyTorch worker reads it: a thread's file\n"
      << "  # is its own\n  reader_work_sharing: False\n";
    no("read offsets: the script reads each sample's bytes consecutively (" +
       Fixed(100 * p.sequential_share, 0) + "% of the traced reads followed the previous one)");
  }
  no("ranks and hosts: the trace is one process; more ranks split the files as DLIO does");
  d.yaml = y.str();
  return d;
}

}  // namespace iomimic::apptrace
