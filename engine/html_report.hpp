// `meshfit search --report report.html` (issues 7, 22): one self-contained page, interactive
// without a network — the inputs; the front as a table (one column per dimension that varies),
// sortable by any column; the chart (engine/front_chart_svg); and for the strategy picked by a
// click on a row or a point (the fastest at first), each pipeline stage's memory as bars of its
// terms against the budget and the step time's breakdown (engine/breakdown_svg).
#pragma once

#include <string>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/time_report.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

// The estimates behind one front row's breakdown.
struct FrontDetail {
  MemoryReport memory;
  TimeReport time;
};

// `details[i]` is the estimate of r.front[i] (one per front row).
std::string html_report(const Model& m, const Cluster& c, const Run& run, const SearchResult& r,
                        const std::vector<FrontDetail>& details, const std::string& chart_svg);

}  // namespace meshfit
