#include "search/search_verifier.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "search/evaluator/memory_evaluator.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

namespace meshfit {

namespace {

std::string number(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

void compare(const SearchSpace& space, const ScoredStrategy& x, const std::string& where, double headroom, bool timed,
             std::vector<ReportedDifference>& out) {
  std::vector<std::string> problems;
  const std::string recorded =
      "peak " + number(x.peak_bytes) + " B on stage " + std::to_string(x.peak_stage) + " recorded, ";
  const MemoryReport mem = estimate_memory(*space.model, *space.run, *space.cluster, x.strategy, headroom);
  if (mem.peak != x.peak_bytes || mem.peak_stage != x.peak_stage ||
      static_cast<std::int64_t>(std::ceil(mem.peak)) != x.mem) {
    problems.push_back(recorded + number(mem.peak) + " B on stage " + std::to_string(mem.peak_stage) + " re-estimated");
  }
  // The plain reference model (reference_memory.hpp) as well: the same figures to 1e-12, its sums
  // made layer by layer where the fast path multiplies runs of layers.
  const MemoryReport ref = reference_memory(*space.model, *space.run, *space.cluster, x.strategy, headroom);
  if (std::fabs(ref.peak - x.peak_bytes) > 1e-12 * std::max(std::fabs(ref.peak), 1.0) ||
      ref.peak_stage != x.peak_stage) {
    problems.push_back(recorded + "the reference model's " + number(ref.peak) + " B on stage " +
                       std::to_string(ref.peak_stage));
  }
  if (timed && !mem.fits) problems.emplace_back("reported as fitting, re-estimated over the budget");
  if (!timed && mem.fits) problems.emplace_back("reported as not fitting, re-estimated within the budget");
  if (timed) {
    const TimeReport t = estimate_step_time(*space.model, *space.run, *space.cluster, x.strategy);
    if (t.step != x.step_s || std::llround(t.step * 1e9) != x.time_ns ||
        t.tokens_per_sec_per_device != x.tokens_per_sec_per_device || t.mfu != x.mfu) {
      problems.push_back("step " + number(x.step_s) + " s recorded, " + number(t.step) + " s re-estimated");
    }
    const TimeReport ref_t = reference_step_time(*space.model, *space.run, *space.cluster, x.strategy);
    if (std::fabs(ref_t.step - x.step_s) > 1e-12 * std::max(std::fabs(ref_t.step), 1.0)) {
      problems.push_back("step " + number(x.step_s) + " s recorded, the reference model's " + number(ref_t.step) +
                         " s");
    }
  }
  if (problems.empty()) return;
  std::string what;
  for (const auto& p : problems) what += (what.empty() ? "" : "; ") + p;
  out.push_back({where, x.strategy, what});
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
