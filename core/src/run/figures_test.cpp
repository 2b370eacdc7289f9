// run::Figures(): every workflow's headline figures reach the analysis
// commands through run/'s table (output/figures.h).

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "kvcache/replay.h"
#include "kvcache/results.h"
#include "metadata/stat_files.h"
#include "run/run.h"
#include "train/results.h"

namespace iomimic::run {
namespace {

bool Has(const output::FigureList& all, const output::FigureList& part) {
  return std::all_of(part.begin(), part.end(), [&](const output::FigureSpec& f) {
    return std::any_of(all.begin(), all.end(),
                       [&](const output::FigureSpec& g) { return g.name == f.name; });
  });
}

TEST_CASE("run figures: every workflow's figures, each name once, each with a path") {
  const output::FigureList& all = Figures();
  std::set<std::string> names;
  for (const output::FigureSpec& f : all) {
    CHECK_MESSAGE(names.insert(f.name).second, "figure named twice: " << f.name);
    CHECK_MESSAGE(!f.path.empty(), f.name);
    CHECK(f.scale > 0);
  }
  CHECK(Has(all, train::Figures()));
  CHECK(Has(all, output::SessionFigures()));
  CHECK(Has(all, kvcache::Figures()));
  CHECK(Has(all, kvcache::ReplayFigures()));
  CHECK(Has(all, metadata::Figures()));
  // Training's first, as compare and results.csv have always shown them.
  CHECK(all.front().name == "train AU %");
}

}  // namespace
}  // namespace iomimic::run
