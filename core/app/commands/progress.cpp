// The progress line of `iomimic run` and `iomimic generate` (run/run.h,
// Progress; docs/observability.md): what the phase has done, its rate and the
// time left.

#include "cli.h"

namespace iomimic::app {

namespace {

// "1:05", "1:02:03", or "--" when unknown.
std::string Duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "--";
  const auto s = static_cast<unsigned long long>(seconds + 0.5);
  if (s >= 3600) return Format("%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
  return Format("%llu:%02llu", s / 60, s % 60);
}

// Time left when `done` of `total` took `seconds`.
std::string Eta(double seconds, double done, double total) {
  if (done <= 0 || total < done) return "--";
  return Duration(seconds * (total - done) / done);
}

// The line without the rank prefix.
std::string ProgressBody(const run::Progress& p) {
  using Phase = run::Progress::Phase;
  constexpr double kMiB = 1024.0 * 1024.0;
  switch (p.phase) {
    case Phase::kIdle:
      return "";
    case Phase::kGenerate: {
      const double mib = static_cast<double>(p.bytes_written) / kMiB;
      return Format(
          "generating: %llu/%llu files, %.1f MiB, %.1f MiB/s, ETA %s",
          static_cast<unsigned long long>(p.files_done),
          static_cast<unsigned long long>(p.files_total), mib,
          p.seconds > 0 ? mib / p.seconds : 0.0,
          Eta(p.seconds, static_cast<double>(p.files_done), static_cast<double>(p.files_total))
              .c_str());
    }
    case Phase::kKvCache: {
      const double mib = static_cast<double>(p.bytes_written) / kMiB;
      return Format("kv-cache: %s of %s, %llu requests, %.1f requests/s, %.1f MiB written",
                    Duration(p.seconds).c_str(), Duration(p.duration).c_str(),
                    static_cast<unsigned long long>(p.requests),
                    p.seconds > 0 ? static_cast<double>(p.requests) / p.seconds : 0.0, mib);
    }
    case Phase::kTrain:
    case Phase::kEval:
    case Phase::kCheckpointWrite:
    case Phase::kCheckpointRead:
      break;
  }
  std::string where;
  if (p.phase == Phase::kCheckpointWrite || p.phase == Phase::kCheckpointRead) {
    const char* verb = p.phase == Phase::kCheckpointWrite ? "writing" : "reading";
    where = p.checkpoints > 0
                ? Format("checkpoint: %s %lld/%lld", verb, static_cast<long long>(p.checkpoint),
                         static_cast<long long>(p.checkpoints))
                : Format("checkpoint: %s #%lld", verb, static_cast<long long>(p.checkpoint));
    if (p.epochs == 0) {  // the checkpoint-only workflow
      return where + Format(", %s elapsed", Duration(p.seconds).c_str());
    }
    where += Format(" (epoch %llu/%llu)", static_cast<unsigned long long>(p.epoch),
                    static_cast<unsigned long long>(p.epochs));
  } else {
    where =
        Format("epoch %llu/%llu, %sstep %llu/%llu", static_cast<unsigned long long>(p.epoch),
               static_cast<unsigned long long>(p.epochs), p.phase == Phase::kEval ? "eval " : "",
               static_cast<unsigned long long>(p.step), static_cast<unsigned long long>(p.steps));
  }
  const double total = static_cast<double>(p.epochs * p.steps_per_epoch);
  return where + Format(", %.1f samples/s, AU %.1f%% so far, ETA %s",
                        p.seconds > 0 ? static_cast<double>(p.samples) / p.seconds : 0.0,
                        p.au_percent,
                        Eta(p.seconds, static_cast<double>(p.train_steps_done), total).c_str());
}

}  // namespace

// With several ranks the line's counts are the reporting rank's
// (generation: its share of the files), and the line says which.
std::string ProgressText(const run::Progress& p) {
  std::string body = ProgressBody(p);
  if (body.empty() || p.ranks <= 1) return body;
  return Format("[rank %d of %d] ", p.rank, p.ranks) + body;
}

}  // namespace iomimic::app
