// A valid strategy with its figures as the search compares them: memory and step time as
// integers (so that ties are exact), the rest for the report.
#pragma once

#include <cstdint>

#include "estimators/strategy.hpp"

namespace meshfit {

struct ScoredStrategy {
  Strategy strategy;
  std::int64_t mem = 0;      // ⌈M_peak⌉ in bytes (search-and-time.md §6.3)
  std::int64_t time_ns = 0;  // llround(T·10^9)
  double peak_bytes = 0;
  std::int64_t peak_stage = 0;
  double step_s = 0, tokens_per_sec_per_device = 0, mfu = 0;
  bool dominated = false;  // in top-k: not on the front
};

}  // namespace meshfit
