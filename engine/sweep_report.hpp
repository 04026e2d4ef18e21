// `meshfit sweep --html FILE`: one self-contained page (no script, no network) with a chart per
// sequence length and global batch — the best step time against the device count (both on log
// scales), one line per model and device, a point per count with a fitting strategy (its
// strategy in the tooltip) — and the table of smallest counts.
#pragma once

#include <string>
#include <vector>

#include "engine/sweep_results.hpp"

namespace meshfit {

std::string sweep_html(const std::string& source, const std::vector<PointResult>& points, bool complete);

}  // namespace meshfit
