// The pipeline makespan of a schedule from the stages' per-micro-batch times
// (docs/spec/search-and-time.md §7.8).
#pragma once

#include <vector>

#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

double pipeline_makespan(const Strategy& s, const std::vector<StageTime>& stages);

}  // namespace meshfit
