#include "search/search_verifier.hpp"

#include <cmath>
#include <sstream>

#include "estimators/memory_model.hpp"
#include "estimators/step_time.hpp"

namespace meshfit {

namespace {

void compare(const SearchSpace& space, const ScoredStrategy& x, const std::string& where, double headroom, bool timed,
             std::vector<ReportedDifference>& out) {
  const MemoryReport mem = estimate_memory(*space.model, *space.run, *space.cluster, x.strategy, headroom);
  std::ostringstream diff;
  diff.precision(17);
  if (mem.peak != x.peak_bytes || mem.peak_stage != x.peak_stage ||
      static_cast<std::int64_t>(std::ceil(mem.peak)) != x.mem) {
    diff << "peak " << x.peak_bytes << " B on stage " << x.peak_stage << " recorded, " << mem.peak << " B on stage "
         << mem.peak_stage << " re-estimated";
  }
  if (timed && !mem.fits) diff << "reported as fitting, re-estimated over the budget; ";
  if (!timed && mem.fits) diff << "reported as not fitting, re-estimated within the budget; ";
  if (timed) {
    const TimeReport t = estimate_step_time(*space.model, *space.run, *space.cluster, x.strategy);
    if (t.step != x.step_s || std::llround(t.step * 1e9) != x.time_ns ||
        t.tokens_per_sec_per_device != x.tokens_per_sec_per_device || t.mfu != x.mfu) {
      diff << (diff.str().empty() ? "" : "; ") << "step " << x.step_s << " s recorded, " << t.step << " s re-estimated";
    }
  }
  if (!diff.str().empty()) out.push_back({where, x.strategy, diff.str()});
}

}  // namespace

std::vector<ReportedDifference> verify_reported(const SearchSpace& space, const SearchResult& result,
                                                double headroom_bytes) {
  std::vector<ReportedDifference> out;
  for (std::size_t i = 0; i < result.front.size(); ++i) {
    compare(space, result.front[i], "front[" + std::to_string(i) + "]", headroom_bytes, true, out);
  }
  for (std::size_t i = 0; i < result.top.size(); ++i) {
    compare(space, result.top[i], "top[" + std::to_string(i) + "]", headroom_bytes, true, out);
  }
  // The closest strategy carries its memory only (it does not fit, so it was never timed).
  if (result.closest) compare(space, *result.closest, "closest", headroom_bytes, false, out);
  return out;
}

}  // namespace meshfit
