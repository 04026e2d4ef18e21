// `explain` for one strategy (docs/spec/search-and-time.md §6.5): every rule it breaks; else
// whether it fits, where it overflows, and the single-dimension changes that make it fit.
#pragma once

#include <string>
#include <vector>

#include "estimators/memory_report.hpp"
#include "estimators/time_report.hpp"
#include "search/search_space.hpp"

namespace meshfit {

struct ExplainChange {
  std::string change;  // "tp 4→8"
  Strategy strategy;
  double peak = 0;
  std::int64_t peak_stage = 0;
  double step = 0;
  bool fits = false;
  double excess = 0;  // peak − budget
};

struct Explanation {
  std::vector<HardRule> broken;  // every hard rule the strategy breaks; empty when valid
  std::vector<Policy> policies;  // enabled policies it breaks (reported, not blocking)
  MemoryReport memory;           // when valid
  TimeReport time;
  std::vector<ExplainChange> changes;  // fitting changes (time, mem, key), or the closest ones
  bool changes_fit = false;
};

Explanation explain_strategy(const SearchSpace& space, const Strategy& s, double headroom_bytes,
                             std::size_t max_changes = 10);

}  // namespace meshfit
