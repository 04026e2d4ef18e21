// The search's verify mode (DuckDB's unoptimised-statement verifier, here for estimates): every
// strategy a search reports — the front, the top-k and the closest when nothing fits — is
// estimated again from scratch, with the plain entry points (estimate_memory, estimate_step_time:
// no per-thread memo, kind cache, stored layout or bound), and compared with what the search
// recorded. Any difference is a bug in the search's reuse or pruning, never noise: both paths
// make the same arithmetic in the same order, so the comparison is exact. The peak and the step
// time are also held against the plain reference models (estimators/reference_memory.hpp,
// reference_step_time.hpp), to 1e-12.
#pragma once

#include <string>
#include <vector>

#include "search/search_space.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

struct ReportedDifference {
  std::string where;  // "front[2]", "top[0]", "closest"
  Strategy strategy;
  std::string what;  // "peak 1.2e10 B on stage 0 recorded, 1.3e10 B on stage 0 re-estimated"
};

// Every difference found; empty when everything agrees. `headroom_bytes` is the search's.
std::vector<ReportedDifference> verify_reported(const SearchSpace& space, const SearchResult& result,
                                                double headroom_bytes);

}  // namespace meshfit
