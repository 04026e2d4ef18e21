// `meshfit search --report report.html` (issue 7): one self-contained page — the inputs, the
// front as a table, the chart (engine/front_chart_svg) and, for the chosen strategy (the fastest
// fitting one), each pipeline stage's memory as a bar of its terms against the budget.
#pragma once

#include <string>

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

// `chosen` is the memory estimate of r.front.front() (ignored when the front is empty).
std::string html_report(const Model& m, const Cluster& c, const Run& run, const SearchResult& r,
                        const MemoryReport& chosen, const std::string& chart_svg);

}  // namespace meshfit
