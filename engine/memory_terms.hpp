// The named memory terms of a stage as reports show them (docs/spec/memory-model.md §13):
// they sum to M_device.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "estimators/memory_report.hpp"

namespace meshfit {

// (JSON key, bytes), in report order.
std::vector<std::pair<std::string, double>> stage_terms(const StageMemory& st);
// The largest term of a stage, for "does not fit" messages.
std::pair<std::string, double> dominant_term(const StageMemory& st);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace meshfit
