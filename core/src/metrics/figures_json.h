// The JSON spellings every results file shares (summary.json, histograms.json,
// <rank>_kv_cache.json, the report's data): strict numbers and a histogram's
// percentiles. Written once here; the workflows' results and output/ call
// them (docs/architecture.md).
//
// Templates over nlohmann's json types (json, ordered_json), so a caller
// keeps its key order; only .cpp files that already use nlohmann include
// this header.

#pragma once

#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <vector>

#include "metrics/histogram.h"

namespace iomimic::metrics {

// A number as strict JSON: NaN and infinities become null (JSON has no NaN;
// DLIO's files hold NaN where Python's json allowed it).
template <typename Json = nlohmann::json>
Json JsonNumber(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// A list of JsonNumber.
template <typename Json = nlohmann::json>
Json JsonNumbers(const std::vector<double>& values) {
  Json out = Json::array();
  for (double v : values) out.push_back(JsonNumber<Json>(v));
  return out;
}

// A percentile of a histogram and its key ("p50" for 0.5).
struct Quantile {
  const char* key;
  double q;
};

// summary.json's and histograms.json's percentiles.
inline constexpr std::initializer_list<Quantile> kResultQuantiles = {
    {"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p999", 0.999}};
// The KV-cache reference's (docs/kvcache.md, "Results"), with P90.
inline constexpr std::initializer_list<Quantile> kReferenceQuantiles = {
    {"p50", 0.50}, {"p90", 0.90}, {"p95", 0.95}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999}};

// `h`'s "count", "mean", each quantile and "max", in nanoseconds divided by
// `ns_per_unit` (1e6: milliseconds). An empty histogram's values are 0.
template <typename Json = nlohmann::json>
Json PercentilesJson(const LatencyHistogram& h, std::initializer_list<Quantile> quantiles,
                     double ns_per_unit = 1e6) {
  Json o;
  o["count"] = h.count();
  o["mean"] = JsonNumber<Json>(h.mean_ns() / ns_per_unit);
  for (const Quantile& q : quantiles) {
    o[q.key] = JsonNumber<Json>(h.count() > 0 ? static_cast<double>(h.Percentile(q.q)) / ns_per_unit
                                              : 0.0);
  }
  o["max"] = JsonNumber<Json>(static_cast<double>(h.max_ns()) / ns_per_unit);
  return o;
}

}  // namespace iomimic::metrics
