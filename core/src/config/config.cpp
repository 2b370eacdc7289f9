#include "config/config.h"

#include <cmath>
#include <iterator>
#include <numbers>

#include "config/scalar_internal.h"
#include "iomimic/enum_names.h"

namespace iomimic::config {
namespace {

// E|X| for X ~ Normal(mean, stdev): the mean of the folded normal.
double FoldedNormalMean(double mean, double stdev) {
  if (stdev <= 0) return std::fabs(mean);
  const double z = mean / stdev;
  const double phi = 0.5 * std::erfc(z / std::numbers::sqrt2);  // P(X < 0)
  return stdev * std::sqrt(2 / std::numbers::pi) * std::exp(-0.5 * z * z) + mean * (1 - 2 * phi);
}

// E|X| for X ~ Uniform(min, max).
double FoldedUniformMean(double min, double max) {
  if (max <= min) return std::fabs(min);
  if (min >= 0) return (min + max) / 2;
  if (max <= 0) return -(min + max) / 2;
  return (min * min + max * max) / (2 * (max - min));
}

}  // namespace

double Distribution::Expected() const {
  switch (kind) {
    case Kind::kConstant:
      return std::fabs(mean);
    case Kind::kNormal:
      return FoldedNormalMean(mean, stdev);
    case Kind::kUniform:
      return FoldedUniformMean(min, max);
    case Kind::kGamma:
      return shape * scale;
    case Kind::kExponential:
      return scale;
    case Kind::kPoisson:
      return lam;
  }
  return 0;
}

const char* Distribution::KindName(Kind kind) {
  static constexpr const char* kNames[] = {"constant", "normal",      "uniform",
                                           "gamma",    "exponential", "poisson"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(Kind::kPoisson) + 1);
  return EnumName(kind, kNames, "constant");
}

std::span<const Distribution::Param> Distribution::Params(Kind kind) {
  static const std::vector<Param> kParams[] = {
      {},
      {{"mean", &Distribution::mean}, {"stdev", &Distribution::stdev}},
      {{"min", &Distribution::min}, {"max", &Distribution::max}},
      {{"shape", &Distribution::shape}, {"scale", &Distribution::scale}},
      {{"scale", &Distribution::scale}},
      {{"lam", &Distribution::lam}},
  };
  static_assert(std::size(kParams) == static_cast<std::size_t>(Kind::kPoisson) + 1);
  const auto index = static_cast<std::size_t>(kind);
  if (index >= std::size(kParams)) return {};
  return kParams[index];
}

Result<Distribution> ParseDistributionScalar(const std::string& text) {
  const std::optional<double> value = internal::ParseDouble(internal::Trim(text));
  if (!value) {
    return Status::InvalidArgument("expected a number of seconds, got '" + text + "'");
  }
  Distribution distribution;
  distribution.mean = *value;
  return distribution;
}

std::string ShuffleModeName(ShuffleMode mode) {
  static constexpr const char* kNames[] = {"off", "seed", "random"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(ShuffleMode::kRandom) + 1);
  return EnumName(mode, kNames, "off");
}

std::string ReadTypeName(ReadType type) {
  static constexpr const char* kNames[] = {"on_demand", "memory"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(ReadType::kMemory) + 1);
  return EnumName(type, kNames, "on_demand");
}

Status ErrorAt(const Config& config, std::initializer_list<std::string_view> paths,
               std::string_view what) {
  for (std::string_view path : paths) {
    auto at = config.origins.where.find(path);
    if (at == config.origins.where.end()) continue;
    const bool from_override = at->second.starts_with("override '");
    return Status::InvalidArgument(at->second + (from_override ? ": " : ": error: ") +
                                   std::string(path) + ": " + std::string(what));
  }
  return Status::InvalidArgument(std::string(*paths.begin()) + ": " + std::string(what));
}

std::string Diagnostic::ToString() const {
  std::string text = file;
  if (line > 0) {
    text.append(":").append(std::to_string(line)).append(":").append(std::to_string(column));
  }
  return text.append(": warning: ").append(message);
}

}  // namespace iomimic::config
