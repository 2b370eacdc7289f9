// DeriveManifest (apptrace/derive.h): each key's value and the comment
// that says where it came from (docs/derive.md, "What is inferred from
// what").

#include "apptrace/derive.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

#include "config/dlio_compat.h"
#include "plan/plan.h"

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

// Most classes a derived data set gets: a bound on the manifest's length
// when every file reads otherwise.
constexpr std::size_t kMostClasses = 1024;

// A class of data files (docs/derive.md, "The read script"): one format,
// the same opens and reads a pass, each read the same in every file of the
// class or the file's size less the same bytes.
struct FileClass {
  std::string format;  // its files' format, or their extension
  std::string name;    // "" when the data set has one class
  // A member's script and size: the first of the data set's samples per
  // file, else the first file's. Where its samples split the reads is the
  // class's.
  std::vector<ScriptSample> script;
  std::uint64_t size = 0;
  // Per read of a pass: the same in every file so far, and the file's size
  // less the same in every file so far.
  std::vector<bool> constant, from_end;
  std::uint64_t files = 0;
};

// The key of a file's class: its format, else its extension (a class name
// starts with a letter), else "data".
std::string ClassKey(const FileProfile& f) {
  std::string key = f.format;
  if (key.empty()) {
    const std::size_t slash = f.path.rfind('/'), dot = f.path.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      for (const char c : f.path.substr(dot + 1)) {
        if (std::isalnum(static_cast<unsigned char>(c))) key += c;
      }
    }
  }
  if (key.empty()) return "data";
  if (!std::isalpha(static_cast<unsigned char>(key[0]))) key = "x" + key;
  return key;
}

// A pass's reads in a row, and its opens: the reads after each open (a
// pause that split a sample without an open does not count).
void Flatten(const std::vector<ScriptSample>& script, std::vector<std::uint64_t>* reads,
             std::vector<std::size_t>* opened) {
  for (const ScriptSample& sample : script) {
    if (sample.open || opened->empty()) opened->push_back(0);
    opened->back() += sample.reads.size();
    reads->insert(reads->end(), sample.reads.begin(), sample.reads.end());
  }
}

// A file's pass in a row: its reads, the reads after each open, and the
// key of the classes it may join (its format and opens).
struct Pass {
  std::vector<std::uint64_t> reads;
  std::vector<std::size_t> opened;
  std::string key;
};

Pass PassOf(const FileProfile& f) {
  Pass pass;
  Flatten(f.script, &pass.reads, &pass.opened);
  pass.key = ClassKey(f);
  for (const std::size_t n : pass.opened) pass.key += " " + std::to_string(n);
  return pass;
}

// Whether file `f` (its pass `b`) reads as class `c`: the same opens and
// reads between them, and each read the class's constant or the file's
// size less the class's. When it does, the class takes it (and its script
// when it has the data set's `spf` samples and the class's had not).
bool Join(FileClass& c, std::vector<std::uint64_t>& a, const FileProfile& f, const Pass& b,
          std::uint64_t spf) {
  if (a.size() != b.reads.size()) return false;
  std::vector<bool> constant = c.constant, from_end = c.from_end;
  for (std::size_t k = 0; k < a.size(); ++k) {
    constant[k] = constant[k] && a[k] == b.reads[k];
    from_end[k] = from_end[k] && a[k] <= c.size && b.reads[k] <= f.size &&
                  c.size - a[k] == f.size - b.reads[k];
    if (!constant[k] && !from_end[k]) return false;
  }
  c.constant = std::move(constant);
  c.from_end = std::move(from_end);
  ++c.files;
  if (c.script.size() != spf && f.script.size() == spf) {
    c.script = f.script;
    c.size = f.size;
    a = b.reads;
  }
  return true;
}

// The data files' classes, and each file's (by index in p.files). Files
// that fit no class of their format make one, up to kMostClasses; past
// it, a file takes its format's class of the nearest size.
std::vector<FileClass> Classify(const TraceProfile& p, std::uint64_t spf,
                                std::vector<std::size_t>* class_of,
                                std::vector<std::string>* notes) {
  std::vector<FileClass> classes;
  std::vector<std::vector<std::uint64_t>> reads;          // each class's script in a row
  std::map<std::string, std::vector<std::size_t>> keyed;  // Pass::key -> classes
  std::uint64_t unfit = 0;
  for (const FileProfile& f : p.files) {
    const Pass pass = PassOf(f);
    std::vector<std::size_t>& candidates = keyed[pass.key];
    std::size_t found = classes.size();
    for (const std::size_t c : candidates) {
      if (Join(classes[c], reads[c], f, pass, spf)) {
        found = c;
        break;
      }
    }
    if (found == classes.size() && classes.size() >= kMostClasses) {
      ++unfit;
      std::uint64_t best = UINT64_MAX;
      found = 0;
      for (std::size_t c = 0; c < classes.size(); ++c) {
        const std::uint64_t d =
            classes[c].size > f.size ? classes[c].size - f.size : f.size - classes[c].size;
        if (classes[c].format == ClassKey(f) && d < best) best = d, found = c;
      }
      ++classes[found].files;
    } else if (found == classes.size()) {
      FileClass c;
      c.format = ClassKey(f);
      c.script = f.script;
      c.size = f.size;
      for (const ScriptSample& sample : f.script) {
        c.constant.insert(c.constant.end(), sample.reads.size(), true);
        c.from_end.insert(c.from_end.end(), sample.reads.size(), true);
      }
      c.files = 1;
      candidates.push_back(classes.size());
      classes.push_back(std::move(c));
      reads.push_back(pass.reads);
    }
    class_of->push_back(found);
  }
  if (classes.size() > 1) {
    std::map<std::string, unsigned> seen;
    for (FileClass& c : classes) {
      const unsigned n = ++seen[c.format];
      c.name = n == 1 ? c.format : c.format + "_" + std::to_string(n);
    }
  }
  if (unfit > 0) {
    notes->push_back(std::to_string(unfit) + " file(s) whose reads fit none of the first " +
                     std::to_string(kMostClasses) +
                     " classes: each reads as the class of its format of the nearest size");
  }
  return classes;
}

// Entries of samples given as their terms: consecutive samples with the
// same opens and terms merged into one "[CLASS] N: [open] TERM*K" entry.
std::vector<std::string> EntriesOf(
    const std::string& name, const std::vector<std::pair<bool, std::vector<std::string>>>& s) {
  std::vector<std::string> entries;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size() && s[j] == s[i]) ++j;
    std::string e = (name.empty() ? "" : name + " ") + std::to_string(j - i) + ":" +
                    (s[i].first ? " open" : "");
    const std::vector<std::string>& terms = s[i].second;
    for (std::size_t k = 0; k < terms.size();) {
      std::size_t m = k;
      while (m < terms.size() && terms[m] == terms[k]) ++m;
      e += " " + terms[k];
      if (m - k > 1) e += "*" + std::to_string(m - k);
      k = m;
    }
    entries.push_back(e);
    i = j;
  }
  return entries;
}

// Class `c`'s entries, its samples brought to `spf` (the data set's
// samples per file): the samples past it joined to the last one.
std::vector<std::string> ClassEntries(const FileClass& c, std::uint64_t spf) {
  std::vector<std::pair<bool, std::vector<std::string>>> samples;
  std::size_t k = 0;
  for (const ScriptSample& sample : c.script) {
    std::vector<std::string> terms;
    for (const std::uint64_t read : sample.reads) {
      const bool from_end = !c.constant[k] && c.from_end[k];
      terms.push_back(!from_end        ? std::to_string(read)
                      : read == c.size ? std::string("file")
                                       : "file-" + std::to_string(c.size - read));
      ++k;
    }
    if (samples.size() >= std::max<std::uint64_t>(1, spf)) {
      std::vector<std::string>& last = samples.back().second;
      last.insert(last.end(), terms.begin(), terms.end());
    } else {
      samples.push_back({sample.open, std::move(terms)});
    }
  }
  return EntriesOf(c.name, samples);
}

// dataset: the data files, their format, sizes and samples.
void DatasetSection(const TraceProfile& p, const std::vector<FileClass>& classes,
                    const std::string& name, std::ostream& y, std::vector<std::string>* notes) {
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
  std::map<std::string, std::uint64_t> formats;  // the classes' formats, files of each
  for (const FileClass& c : classes) formats[c.format] += c.files;
  if (formats.size() > 1) {
    std::string list;
    for (const auto& [format, n] : formats) {
      list += (list.empty() ? "" : ", ") + format + " (" + std::to_string(n) + " files)";
    }
    y << "  # the files are " << list << ", by their first bytes or extension;\n"
      << "  # generated as " << gen
      << ", since iomimic.read_script, not a format's reader, makes the reads\n";
    no("the files' contents: they are " + list + ", generated as " + gen +
       " (the read script of each file's class makes the reads, so no reader parses them)");
  } else if (p.format.empty()) {
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
    << "), over the samples, for DLIO;\n  # iomimic generates each file at its traced size "
    << "(iomimic.data_files)\n"
    << "  record_length_bytes: " << (median + spf - 1) / spf << "\n"
    << "  record_length_bytes_stdev: " << static_cast<std::uint64_t>(stdev / spf) << "\n\n";
}

// How the derived run goes through the data set: samples a step and an
// epoch, and, when the trace's epochs left files out, the seeded file
// shuffle and the files' order under which the run's epochs leave out as
// many.
struct Schedule {
  std::uint64_t files = 0, spf = 1, threads = 1;
  bool file_batches = false;
  std::uint64_t want = 1, batch = 1;
  std::uint64_t passes = 0;            // the files' passes over all epochs
  std::uint64_t per_epoch = 0;         // samples an epoch
  bool shuffled = false;               // the seeded file shuffle places the left-out files
  std::uint64_t seed = 0;              // train.seed, when shuffled
  bool exact = false;                  // each file is read as many times as traced
  std::vector<std::size_t> traced_of;  // generated file -> index in p.files
};

// The times each generated file is read over `epochs` epochs of the run
// `c` describes (one rank).
std::vector<unsigned> ReadsPerFile(const config::Config& c, const plan::DatasetLayout& layout,
                                   unsigned epochs) {
  std::vector<unsigned> reads(layout.num_files(plan::Split::kTrain), 0);
  const plan::ShuffleSeeds seeds{c.train.seed, c.train.seed_change_epoch, 0};
  for (unsigned e = 1; e <= epochs; ++e) {
    const plan::EpochPlan plan(c, layout, plan::Split::kTrain, 0, 1, e, seeds);
    std::vector<bool> seen(reads.size(), false);
    for (std::uint64_t i = 0; i < plan.samples(); ++i) {
      const std::uint64_t file = plan.Sample(i).file;
      if (!seen[file]) seen[file] = true, ++reads[file];
    }
  }
  return reads;
}

Schedule ScheduleOf(const TraceProfile& p) {
  Schedule s;
  s.files = p.files.size();
  s.spf = std::max<std::size_t>(1, p.script.size());
  s.threads = std::max<unsigned>(1, p.reader_threads);
  if (s.files == 0) return s;  // a program that only writes
  // Several threads, each file opened once a pass: a file's samples are one
  // batch, so that one thread reads them (a batch is one worker's).
  s.file_batches = s.threads > 1 && s.spf > 1 && p.opens_per_file < 1.5;
  s.want = s.file_batches ? s.spf : s.threads;
  // Samples an epoch: the files' passes over the epochs, fewer than the
  // data set's when an epoch left files out.
  for (const FileProfile& f : p.files) s.passes += f.passes;
  s.per_epoch = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(std::llround(static_cast<double>(s.passes * s.spf) / p.epochs)), 1,
      s.files * s.spf);
  s.batch = DividingBatch(s.want, s.per_epoch);
  s.traced_of.resize(s.files);
  std::iota(s.traced_of.begin(), s.traced_of.end(), std::size_t{0});
  std::vector<unsigned> wanted;  // the traced files' passes
  for (const FileProfile& f : p.files) wanted.push_back(f.passes);
  std::sort(wanted.begin(), wanted.end());
  s.exact = wanted.empty() || wanted.front() == wanted.back();
  if (s.per_epoch >= s.files * s.spf || p.epochs < 2 || s.exact) return s;
  // Files read in fewer epochs than others: a seeded file shuffle leaves
  // out other files in each epoch. The first seed from 123 (DLIO's) under
  // which the run's files are read as many times as the traced ones were,
  // within a bound on the work.
  config::Config c;
  c.dataset.num_files_train = s.files;
  c.dataset.num_files_eval = 0;
  c.dataset.num_samples_per_file = s.spf;
  c.reader.batch_size = s.batch;
  c.reader.read_threads = s.threads;
  c.reader.data_loader = "pytorch";
  c.reader.file_shuffle = config::ShuffleMode::kSeed;
  c.reader.sample_shuffle = config::ShuffleMode::kOff;
  c.train.total_training_steps = static_cast<std::int64_t>(s.per_epoch / s.batch);
  const plan::DatasetLayout layout(c, config::kDerivedDataFormat.data());
  const std::uint64_t work = std::max<std::uint64_t>(1, s.files * s.spf * p.epochs);
  const std::uint64_t tries = std::clamp<std::uint64_t>(20000000 / work, 1, 1000);
  std::uint64_t best_miss = UINT64_MAX;
  std::vector<unsigned> best;
  for (std::uint64_t t = 0; t < tries && best_miss > 0; ++t) {
    c.train.seed = 123 + t;
    std::vector<unsigned> reads = ReadsPerFile(c, layout, p.epochs);
    std::vector<unsigned> sorted = reads;
    std::sort(sorted.begin(), sorted.end());
    std::uint64_t miss = 0;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      miss += sorted[i] > wanted[i] ? sorted[i] - wanted[i] : wanted[i] - sorted[i];
    }
    if (miss < best_miss) best_miss = miss, best = std::move(reads), s.seed = c.train.seed;
  }
  // The traced files by their passes onto the generated files by their
  // reads, the most read first, each in order.
  std::vector<std::size_t> generated(s.files), traced(s.files);
  std::iota(generated.begin(), generated.end(), std::size_t{0});
  std::iota(traced.begin(), traced.end(), std::size_t{0});
  std::stable_sort(generated.begin(), generated.end(),
                   [&](std::size_t a, std::size_t b) { return best[a] > best[b]; });
  std::stable_sort(traced.begin(), traced.end(), [&](std::size_t a, std::size_t b) {
    return p.files[a].passes > p.files[b].passes;
  });
  for (std::size_t i = 0; i < s.files; ++i) s.traced_of[generated[i]] = traced[i];
  s.shuffled = true;
  s.exact = best_miss == 0;
  return s;
}

// reader and train: threads, samples per step, epochs, compute.
void ReaderAndTrainSections(const TraceProfile& p, const Schedule& s, std::ostream& y,
                            std::vector<std::string>* notes) {
  auto no = [&](const std::string& line) { notes->push_back(line); };
  const std::uint64_t files = s.files, spf = s.spf, threads = s.threads, batch = s.batch;
  const std::uint64_t per_epoch = s.per_epoch, want = s.want;
  const bool file_batches = s.file_batches;
  y << "reader:\n  data_loader: pytorch\n"
    << "  # " << p.reader_threads << " reader thread(s): " << p.reader_threads
    << " thread(s) issued reads of data files\n"
    << "  read_threads: " << threads << "\n"
    << "  # " << batch << " sample(s) a step: "
    << (file_batches ? "a file's samples, so that one thread reads each file (each was opened "
                       "once a pass)"
                     : "one per reader thread");
  if (batch != want) y << " (lowered to divide the " << per_epoch << " samples an epoch)";
  y << "\n  batch_size: " << batch << "\n";
  if (s.shuffled) {
    y << "  # the order: the files shuffled with train.seed, so that each epoch leaves out\n"
      << "  # other files, as the trace's did (iomimic.data_files puts the files read in\n"
      << "  # fewer epochs where the shuffle leaves them out; a trace shows one order, not\n"
      << "  # the rule)\n  file_shuffle: seed\n  sample_shuffle: off\n\n";
    no("the shuffle rule (one trace shows one order): the files shuffled with a seed under "
       "which each epoch leaves out " +
       std::string(s.exact ? "as many files as the trace's did"
                           : "about as many files as the trace's did (no seed tried matched)") +
       ", samples in order");
  } else {
    y << "  # the order: as the files are listed (a trace shows one order, not the rule)\n"
      << "  file_shuffle: off\n  sample_shuffle: off\n\n";
    no("the shuffle rule (one trace shows one order): files and samples read in order");
  }

  y << "train:\n  # " << p.epochs << " epoch(s): the data files' bytes were read "
    << Fixed(p.distinct_bytes ? static_cast<double>(p.read_bytes) / p.distinct_bytes : 0, 2)
    << " times over\n  epochs: " << p.epochs << "\n";
  if (s.shuffled) {
    y << "  # the file shuffle's seed (see reader.file_shuffle)\n  seed: " << s.seed << "\n";
  }
  if (per_epoch < files * spf) {
    y << "  # " << per_epoch << " of the " << files * spf << " samples an epoch: the files were "
      << "read " << s.passes << " times in " << p.epochs << " epoch(s)\n"
      << "  # (a cap on the steps an epoch: raise it with num_files_train)\n"
      << "  total_training_steps: " << per_epoch / batch << "\n";
    if (!s.shuffled) {
      no("which files an epoch left out: " + std::to_string(files * spf - per_epoch) +
         " sample(s) an epoch were not read; the run leaves out the last ones in order");
    }
  }
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
  std::vector<std::pair<bool, std::vector<std::string>>> samples;
  for (const ScriptSample& sample : script) {
    std::vector<std::string> terms;
    for (const std::uint64_t read : sample.reads) terms.push_back(std::to_string(read));
    samples.push_back({sample.open, std::move(terms)});
  }
  return EntriesOf("", samples);
}

DerivedManifest DeriveManifest(const TraceProfile& p, const std::string& name) {
  DerivedManifest d;
  const std::uint64_t spf = std::max<std::size_t>(1, p.script.size());
  std::vector<std::size_t> class_of;
  const std::vector<FileClass> classes = Classify(p, spf, &class_of, &d.not_inferred);
  const Schedule schedule = ScheduleOf(p);
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
    DatasetSection(p, classes, name, y, &d.not_inferred);
    ReaderAndTrainSections(p, schedule, y, &d.not_inferred);
  }
  if (writes) CheckpointSection(p, name, y, &d.not_inferred);
  if (reads) {
    y << "iomimic:\n";
    if (classes.size() == 1) {
      y << "  # the reads of each sample, in place of a format's: the files' reads of one pass,\n"
        << "  # one entry per burst of reads (N: samples; open: the burst opened the file;\n"
        << "  # SIZE*K: K reads; file-C: the file's size less C bytes, for reads that\n"
        << "  # varied with it)\n";
    } else {
      y << "  # the reads of each sample, in place of a format's, per class of files (one\n"
        << "  # format, each read the same in its files or their size less the same): a\n"
        << "  # class's files' reads of one pass, one entry per burst of reads (N: samples;\n"
        << "  # open: the burst opened the file; SIZE*K: K reads; file-C: the file's size\n"
        << "  # less C bytes)\n";
    }
    y << "  read_script:\n";
    std::vector<std::string> uneven;  // classes whose samples a pass are not spf
    for (const FileClass& c : classes) {
      if (c.script.size() != spf) uneven.push_back(c.name.empty() ? c.format : c.name);
      for (const std::string& e : ClassEntries(c, spf)) y << "    - \"" << e << "\"\n";
    }
    if (!uneven.empty()) {
      std::string list;
      for (const std::string& u : uneven) list += (list.empty() ? "" : ", ") + u;
      d.not_inferred.push_back("samples per file: " + std::to_string(spf) +
                               " (the median file's bursts); the files "
                               "of class(es) " +
                               list +
                               " paused otherwise (more bursts joined in the last sample, "
                               "fewer read again from the first)");
    }
    y << "  # each file's size (to within the samples per file in bytes) and class, in the\n"
      << "  # traced files' order ("
      << (schedule.shuffled ? "the files read in fewer epochs where the shuffle leaves them out"
                            : "by path")
      << "); SIZE*K: K files\n  data_files:\n";
    const std::vector<std::size_t>& of = schedule.traced_of;
    for (std::size_t i = 0; i < of.size();) {
      std::size_t j = i;
      while (j < of.size() && p.files[of[j]].size == p.files[of[i]].size &&
             class_of[of[j]] == class_of[of[i]]) {
        ++j;
      }
      const std::string& cls = classes[class_of[of[i]]].name;
      y << "    - \"" << p.files[of[i]].size << (j - i > 1 ? "*" + std::to_string(j - i) : "")
        << (cls.empty() ? "" : " " + cls) << "\"\n";
      i = j;
    }
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
