// The two pictures of one strategy in the HTML report: each pipeline stage's memory as a bar of
// its terms (docs/spec/memory-model.md §13) against the budget, on a GiB axis; and the step time
// as one bar of its terms (docs/spec/search-and-time.md §7.10), on a seconds axis. Inline SVG,
// each segment with its value in a tooltip, and an HTML legend below.
#pragma once

#include <string>

#include "estimators/memory_report.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

std::string stage_memory_bars(const MemoryReport& mem);
std::string step_time_bar(const TimeReport& t);

}  // namespace meshfit
