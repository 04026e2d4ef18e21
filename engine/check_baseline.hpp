// `meshfit check --baseline OLD.json`: an earlier JSON report of the same manifest. An entry
// fails when its pinned strategy's peak memory, or its best step time (free entries), grew by
// more than the allowed fraction since then; the reason names the memory term that grew most.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/check_runner.hpp"

namespace meshfit {

struct BaselineEntry {
  bool pinned = false;
  std::optional<double> peak_gib, step_time_s;
  std::vector<std::pair<std::string, double>> terms_gib;
};

// Entries by name. Throws InputError naming the file and field when it is not a check report.
std::map<std::string, BaselineEntry> read_check_baseline(const std::string& path);

// "5%" or "5" (percent) -> 0.05; throws InputError naming --max-growth.
double parse_max_growth(const std::string& text);

// Marks entries whose figures grew beyond `max_growth` as failed (an error entry stays an error).
// Entries absent from the baseline are new and pass on their own check.
void compare_with_baseline(std::vector<CheckResult>& results, const std::map<std::string, BaselineEntry>& baseline,
                           double max_growth);

}  // namespace meshfit
