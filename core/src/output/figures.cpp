#include "output/figures.h"

namespace iomimic::output {

const FigureList& SessionFigures() {
  static const FigureList figures = {
      {"accelerators", {"num_accelerators"}, true},
      {"wall s", {"iomimic", "wall_seconds"}, false},
      {"peak RSS MiB", {"iomimic", "peak_rss_MiB_max_rank"}, false},
  };
  return figures;
}

FigureList JoinFigures(const std::vector<const FigureList*>& lists) {
  FigureList out;
  for (const FigureList* list : lists) out.insert(out.end(), list->begin(), list->end());
  return out;
}

}  // namespace iomimic::output
