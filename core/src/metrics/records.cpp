#include "metrics/records.h"

#include <cmath>
#include <numeric>

#include "config/config.h"

namespace iomimic::metrics {
namespace {

struct Window {
  double compute_sum = 0;
  double total_time = 0;
};

Window MeasureWindow(const PhaseRecord& r, std::uint64_t s, std::uint64_t e) {
  Window w;
  const std::uint64_t n = r.steps();
  double excluded = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    bool in_window = i >= s && i + e < n;
    if (in_window) {
      w.compute_sum += r.compute[i];
    } else if (i < r.proc.size()) {
      excluded += r.proc[i];
    }
  }
  w.total_time = Seconds(r.start, r.end) - excluded;
  return w;
}

}  // namespace

PhaseMetrics TrainBlockMetrics(const PhaseRecord& block, std::uint64_t exclude_start,
                               std::uint64_t exclude_end, std::uint64_t batch_size) {
  PhaseMetrics m;
  m.steps = block.steps();
  Window w = MeasureWindow(block, exclude_start, exclude_end);
  if (w.total_time > 0) {
    m.au_percent = w.compute_sum > 0 ? 100.0 * w.compute_sum / w.total_time : 0.0;
    double counted = static_cast<double>(m.steps) - 2.0;
    m.samples_per_second =
        counted > 0 ? counted / w.total_time * static_cast<double>(batch_size) : 0.0;
  }
  return m;
}

PhaseMetrics EvalMetrics(const PhaseRecord& eval, std::uint64_t exclude_start,
                         std::uint64_t exclude_end, std::uint64_t batch_size) {
  PhaseMetrics m;
  m.steps = eval.steps();
  Window w = MeasureWindow(eval, exclude_start, exclude_end);
  if (w.total_time > 0 && w.compute_sum > 0) m.au_percent = 100.0 * w.compute_sum / w.total_time;
  double wall = Seconds(eval.start, eval.end);
  if (wall > 0) {
    m.samples_per_second = static_cast<double>(m.steps) / wall * static_cast<double>(batch_size);
  }
  return m;
}

PhaseMetrics CombineBlocks(const std::vector<PhaseMetrics>& blocks) {
  PhaseMetrics out;
  double au = 0, tp = 0;
  for (const PhaseMetrics& b : blocks) {
    out.steps += b.steps;
    au += b.au_percent * static_cast<double>(b.steps);
    tp += b.samples_per_second * static_cast<double>(b.steps);
  }
  if (out.steps > 0) {
    out.au_percent = au / static_cast<double>(out.steps);
    out.samples_per_second = tp / static_cast<double>(out.steps);
  }
  return out;
}

MeanStdev Summarize(const std::vector<double>& values) {
  MeanStdev s;
  if (values.empty()) return s;
  double n = static_cast<double>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double var = 0;
  for (double v : values) var += (v - s.mean) * (v - s.mean);
  s.stdev = std::sqrt(var / n);
  return s;
}

EpochMetrics ComputeEpochMetrics(const EpochRecord& epoch, const config::Config& c) {
  EpochMetrics m;
  for (const PhaseRecord& b : epoch.blocks) {
    m.blocks.push_back(TrainBlockMetrics(b, c.output.exclude_start_steps,
                                         c.output.exclude_end_steps, c.reader.batch_size));
  }
  m.train = CombineBlocks(m.blocks);
  if (epoch.eval) {
    m.eval = EvalMetrics(*epoch.eval, c.output.exclude_start_steps, c.output.exclude_end_steps,
                         c.reader.batch_size_eval);
  }
  return m;
}

}  // namespace iomimic::metrics
