// The headline figures of a run, as the analysis commands read them back
// from summary.json (compare, sweep's results.csv, search, report:
// docs/analysis.md, "Figures").
//
// A figure is data, not code: a label, the keys that lead from summary.json's
// root to a number, and which way is better. Each workflow lists the figures
// of the summary.json section it writes, beside the code that writes it
// (train::Figures(), kvcache::Figures(), ...); run/ gathers the lists in its
// table of workflows (run::Figures()) and the commands hand that list to
// analysis/, which reads any run folder through it without knowing a
// workflow. A new workflow's figures reach compare, sweep and report through
// its own list and its row in run/'s table.

#pragma once

#include <string>
#include <vector>

namespace iomimic::output {

struct FigureSpec {
  // The label printed by compare and used as the column of results.csv and
  // the name search and report look a figure up by; unique over all
  // workflows (a repository test checks it), e.g. "kv hit rate".
  std::string name;
  // The keys from summary.json's root to the number, e.g.
  // {"kv_cache", "cache", "hit_rate"}. A run whose summary.json has no
  // number there does not have the figure (compare prints "-").
  std::vector<std::string> path;
  bool higher_is_better = true;
  // When not empty, the figure is present only where the number at this
  // path is above 0: a tier the run had (its capacity), a QoS class that had
  // requests.
  std::vector<std::string> only_if_positive = {};
  // The number is multiplied by this (1e3: seconds printed as ms).
  double scale = 1;
};

using FigureList = std::vector<FigureSpec>;

// The figures every run has, whatever its workflows: the accelerators it
// emulated, its wall time and its largest rank's peak RSS.
const FigureList& SessionFigures();

// `lists` one after the other, in order.
FigureList JoinFigures(const std::vector<const FigureList*>& lists);

}  // namespace iomimic::output
