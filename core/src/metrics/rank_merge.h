// Histograms merged over every rank of a run, in two collectives however
// many there are. The one cross-rank histogram merge of the results
// (training's, the KV-cache workflow's, the storage counters').

#pragma once

#include <vector>

#include "cluster/cluster.h"
#include "metrics/histogram.h"

namespace iomimic::metrics {

// Collective: every rank passes its histograms, the same number in the same
// order, and gets each one merged over the ranks (buckets, count and sum
// summed; max and min the ranks' extremes). One sum of every bucket and one
// maximum of every extreme (a minimum is the maximum of its negation): each
// collective costs a round of every rank being scheduled, tens of
// milliseconds on an oversubscribed client at 128 ranks (docs/cluster.md,
// "Scale").
std::vector<LatencyHistogram> MergeOverRanks(const std::vector<const LatencyHistogram*>& local,
                                             cluster::Cluster& cluster);

}  // namespace iomimic::metrics
