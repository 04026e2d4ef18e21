// The search as a picture (issue 7): a self-contained SVG of every fitting strategy (one faint
// dot per occupied cell of the search's FitCloud), the Pareto front as a line through its numbered
// points (1 = fastest; each point's <title> holds its strategy), the memory budget as a vertical
// line, and axes with units: peak memory per device (GiB, linear) against step time (s, log).
#pragma once

#include <string>

#include "search/strategy_search.hpp"

namespace meshfit {

std::string front_chart_svg(const SearchResult& r, const std::string& title);

}  // namespace meshfit
