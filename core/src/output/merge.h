// The cross-rank merge of the results (output/model.cpp): each rank's
// records as text for Cluster::GatherStringsToRoot or AllGatherStrings and
// back, and the per-path counters' merge. Linear in the ranks' records (a
// map by path for the counters); the unit benchmark in merge_test.cpp
// times it for 1,024 ranks (docs/cluster.md, "Scale").

#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "output/model.h"

namespace iomimic::output {

// One rank's timeline rows as text (numbers exact) and back.
std::string EncodeTimeline(const std::vector<metrics::TimelineRow>& rows);
std::vector<metrics::TimelineRow> DecodeTimeline(const std::string& text);

// One rank's events as text and back (`rank` is set on each decoded event).
std::string EncodeEvents(const std::vector<EventEntry>& events);
std::vector<EventEntry> DecodeEvents(const std::string& text, int rank);

// One rank's per-path counters as text (timestamps made relative to the
// run's origin, `steady_to_origin_ns` on the steady clock) and back.
std::string EncodeFileCounters(
    const std::vector<std::pair<std::string, session::FileCounters>>& all,
    std::int64_t steady_to_origin_ns);
std::vector<std::pair<std::string, session::FileCounters>> DecodeFileCounters(
    const std::string& text);

// Every rank's EncodeFileCounters text (index = rank) merged per path (rank
// -1 when several ranks used it, as Darshan reduces shared files) into
// r->io_counters: the top `top` paths by bytes (0 = all) and an "others" row
// for the rest; r->io_counters_total and r->io_counters_paths over all.
void MergeIoCounters(const std::vector<std::string>& ranks, std::uint64_t top, RunResults* r);

}  // namespace iomimic::output
