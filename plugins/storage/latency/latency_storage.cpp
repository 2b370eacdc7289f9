#include "latency_storage.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <string>
#include <thread>
#include <utility>

namespace iomimic::latency {

// The descriptor's flags, and what capabilities() may claim (a decorator: capabilities() are its
// inner back end's).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_DECORATOR;
namespace {

// A uniform double in [0, 1) from (seed, index, stream).
double Uniform(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  std::uint64_t state = MixSeed(MixSeed(seed, index), stream);
  return static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;
}

std::string Owner(const PluginOptions& opts) {
  return opts.owner().empty() ? std::string("storage plugin 'latency'") : opts.owner();
}

Result<std::chrono::nanoseconds> GetDuration(const PluginOptions& opts, const char* key) {
  IOMIMIC_ASSIGN_OR_RETURN(std::string text, opts.GetString(key, "0"));
  Result<std::chrono::nanoseconds> parsed = ParseDuration(text);
  if (!parsed.ok()) {
    return Status::InvalidArgument(Owner(opts) + ": option '" + key + "' = '" + text +
                                   "' is not a duration such as 0.002, 2ms or 500us");
  }
  return parsed;
}

}  // namespace

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  std::string s(text);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.empty()) return Status::InvalidArgument("empty duration");
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(number) || number < 0) {
    return Status::InvalidArgument("'" + s + "' is not a duration");
  }
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale;
  if (unit.empty() || unit == "s") {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us" || unit == "\xC2\xB5s") {  // also "µs"
    scale = 1e3;
  } else if (unit == "ns") {
    scale = 1;
  } else {
    return Status::InvalidArgument("'" + s + "' has an unknown unit (ns, us, ms, s)");
  }
  const double ns = number * scale;
  if (ns > 3.6e12 * 24) return Status::InvalidArgument("'" + s + "' is longer than a day");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

Result<LatencyOptions> ParseOptions(const PluginOptions& opts) {
  LatencyOptions out;
  const std::string owner = Owner(opts);
  IOMIMIC_ASSIGN_OR_RETURN(out.delay, GetDuration(opts, "delay"));
  IOMIMIC_ASSIGN_OR_RETURN(out.delay_stdev, GetDuration(opts, "delay_stdev"));
  IOMIMIC_ASSIGN_OR_RETURN(out.delay_max, GetDuration(opts, "delay_max"));
  IOMIMIC_ASSIGN_OR_RETURN(out.distribution,
                           opts.GetChoice("distribution", Distribution::kConstant,
                                          {{"constant", Distribution::kConstant},
                                           {"uniform", Distribution::kUniform},
                                           {"normal", Distribution::kNormal},
                                           {"exponential", Distribution::kExponential}}));
  // Bandwidth: a byte count per second; accept a trailing "/s".
  IOMIMIC_ASSIGN_OR_RETURN(std::string bw, opts.GetString("bandwidth", "0"));
  std::string bytes_text = bw;
  if (bytes_text.size() > 2 && bytes_text.ends_with("/s")) bytes_text.resize(bytes_text.size() - 2);
  PluginOptions one(owner, {{"bandwidth", bytes_text}});
  Result<std::uint64_t> rate = one.GetBytes("bandwidth", 0);
  if (!rate.ok()) {
    return Status::InvalidArgument(owner + ": option 'bandwidth' = '" + bw +
                                   "' is not a rate such as 200M (bytes per second)");
  }
  out.bandwidth = *rate;
  IOMIMIC_ASSIGN_OR_RETURN(out.burst, opts.GetBytes("burst", 0));
  IOMIMIC_ASSIGN_OR_RETURN(out.apply_to_writes, opts.GetBool("apply_to_writes", true));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t seed, opts.GetInt("seed", 0));
  out.seed = static_cast<std::uint64_t>(seed);
  return out;
}

std::chrono::nanoseconds DelayModel::Draw(std::uint64_t index) const {
  const double mean = static_cast<double>(options_.delay.count());
  const double stdev = static_cast<double>(options_.delay_stdev.count());
  double x = mean;
  switch (options_.distribution) {
    case Distribution::kConstant:
      break;
    case Distribution::kUniform: {
      const double half = stdev > 0 ? std::numbers::sqrt3 * stdev : mean;
      x = mean - half + 2 * half * Uniform(options_.seed, index, 0);
      break;
    }
    case Distribution::kNormal: {
      // Box-Muller; 1 - U lies in (0, 1], so the logarithm is finite.
      const double u1 = 1.0 - Uniform(options_.seed, index, 0);
      const double u2 = Uniform(options_.seed, index, 1);
      x = mean + stdev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
      break;
    }
    case Distribution::kExponential:
      x = -mean * std::log(1.0 - Uniform(options_.seed, index, 0));
      break;
  }
  x = std::max(0.0, x);
  if (options_.delay_max.count() > 0) {
    x = std::min(x, static_cast<double>(options_.delay_max.count()));
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(x));
}

TokenBucket::TokenBucket(std::uint64_t bytes_per_second, std::uint64_t burst_bytes)
    : ns_per_byte_(1e9 / static_cast<double>(bytes_per_second)),
      burst_ns_(static_cast<std::int64_t>(static_cast<double>(burst_bytes) * ns_per_byte_)),
      next_free_ns_(std::numeric_limits<std::int64_t>::min() / 2) {}

Clock::time_point TokenBucket::Reserve(std::uint64_t bytes, Clock::time_point now) {
  const std::int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const std::int64_t cost = static_cast<std::int64_t>(static_cast<double>(bytes) * ns_per_byte_);
  std::int64_t current = next_free_ns_.load(std::memory_order_relaxed);
  std::int64_t finish;
  do {
    const std::int64_t start = std::max(current, now_ns - burst_ns_);
    finish = start + cost;
  } while (!next_free_ns_.compare_exchange_weak(current, finish, std::memory_order_relaxed));
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(finish)));
}

LatencyStorage::LatencyStorage(Storage* inner, const LatencyOptions& options)
    : ForwardingStorage(inner), options_(options), delays_(options) {
  if (options_.bandwidth > 0) {
    bucket_ = std::make_unique<TokenBucket>(options_.bandwidth, options_.burst);
  }
}

void LatencyStorage::Pace(std::uint64_t bytes) {
  const Clock::time_point now = Clock::now();
  Clock::time_point until = now;
  if (bucket_ != nullptr) until = bucket_->Reserve(bytes, now);
  if (!delays_.zero()) until += delays_.Next();
  if (until > now) std::this_thread::sleep_until(until);
}

namespace {

// Every data call is the inner file's, then the wait its bytes cost
// (LatencyStorage::Pace; the file comment of latency_storage.h).
class LatencyFile final : public DecoratorFile<LatencyStorage> {
 public:
  using DecoratorFile::DecoratorFile;

  // The inner ReadAt, then the wait for the bytes it read (0 on failure).
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    Result<std::size_t> n = inner().ReadAt(offset, destination);
    storage().Pace(n.ok() ? *n : 0);
    return n;
  }

  // The inner WriteAt, then (apply_to_writes) the wait for its bytes.
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    Status s = inner().WriteAt(offset, source);
    if (storage().options().apply_to_writes) storage().Pace(s.ok() ? source.size() : 0);
    return s;
  }

  // The inner WriteAtAll, then (apply_to_writes) the wait for this rank's
  // bytes.
  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override {
    Status s = inner().WriteAtAll(offset, source);
    if (storage().options().apply_to_writes) storage().Pace(s.ok() ? source.size() : 0);
    return s;
  }

  // The inner ReadBatch as one operation: one delay, the sum of its bytes.
  Status ReadBatch(std::span<ReadRequest> requests) override {
    Status s = inner().ReadBatch(requests);
    std::uint64_t bytes = 0;
    for (const ReadRequest& r : requests) bytes += r.bytes_read;
    storage().Pace(bytes);
    return s;
  }
};

}  // namespace

Result<std::unique_ptr<File>> LatencyStorage::WrapFile(std::unique_ptr<File> file,
                                                       const OpenOptions&) {
  return WrapIn<LatencyFile>("latency", std::move(file), this);
}

Result<std::unique_ptr<Storage>> CreateLatencyStorage(const PluginContext& context) {
  return CreateDecorator<LatencyStorage>("latency", context, &ParseOptions);
}

}  // namespace iomimic::latency

namespace {
const IomimicOptionSpec kLatencyOptions[] = {
    {"delay", "string", "0", "added per operation: seconds or 2ms, 500us, 100ns"},
    {"distribution", "string", "constant", "constant, uniform, normal or exponential"},
    {"delay_stdev", "string", "0", "standard deviation of uniform and normal delays"},
    {"delay_max", "string", "0", "cap on every delay (0: none)"},
    {"bandwidth", "bytes", "0", "bytes per second for all threads together, e.g. 200M (0: none)"},
    {"burst", "bytes", "0", "bytes that may pass at once after idle time"},
    {"apply_to_writes", "bool", "true", "delay and cap writes too"},
    {"seed", "int", "0", "seed of the delay draws"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("latency", "1.0.0",
                              "decorator: adds per-operation delay and a shared bandwidth cap",
                              iomimic::latency::kCapabilities, kLatencyOptions,
                              &iomimic::latency::CreateLatencyStorage, "inner=posix,delay=10us");
