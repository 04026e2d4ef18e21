// Checking the entries of `meshfit check`: a pinned strategy must fit its budget (and meet the
// entry's expectations); a free entry must have at least one fitting strategy, the fastest of
// which is reported. Entries run in parallel (oneTBB); each result is independent of the others
// and of the thread count.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/check_manifest.hpp"
#include "estimators/strategy.hpp"
#include "search/scored_strategy.hpp"

namespace meshfit {

class SearchWorkspace;

enum class CheckStatus { pass, fail, error };
const char* to_string(CheckStatus s);

struct CheckResult {
  std::string name, model, file, device;
  std::int64_t line = 0, devices = 0;
  CheckStatus status = CheckStatus::error;
  std::string reason;   // why it failed or could not be read; for a pass, empty
  bool pinned = false;  // the entry gives a strategy
  // The pinned strategy, or the fastest fitting one (free entries); absent on error or when none fits.
  std::optional<Strategy> strategy;
  std::optional<double> peak_gib, budget_gib, step_time_s, tokens_per_sec_per_device;
  std::optional<double> peak_likely_lo_gib, peak_likely_hi_gib;  // p10–p90 (engine/uncertainty.hpp)
  std::int64_t peak_stage = 0;
  std::vector<std::pair<std::string, double>> terms_gib;  // the peak stage's memory terms
  std::int64_t valid = 0;                                 // free entries: valid strategies searched
  std::vector<ScoredStrategy> front;  // free entries with keep_front: the Pareto front, fastest first
  std::optional<double> baseline_peak_gib, baseline_step_time_s;  // from --baseline, when compared
  double seconds = 0;
};

// Never throws: errors become status error. `workspace`: storage kept across checks (null: the
// search makes its own).
CheckResult run_check(const CheckEntry& entry, SearchWorkspace* workspace = nullptr);
std::vector<CheckResult> run_checks(const std::vector<CheckEntry>& entries);

// 0 every entry passes, 1 some entry fails, 2 some entry could not be read (cli.md).
int check_exit_code(const std::vector<CheckResult>& results);

}  // namespace meshfit
