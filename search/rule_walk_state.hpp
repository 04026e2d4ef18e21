// What the enumeration of a triple (search_space_enumerate.hpp) keeps of the rule plan's outcomes
// (rule_plan.hpp) along its path: the rows of first failing rules per micro-batch size, the keyed
// levels' outcomes, the ZeRO settings' summaries and the credits deferred to the etp level. One
// per thread, reused from triple to triple: each vector keeps its storage, and the vectors of
// vectors keep their elements' (a logical size, not the vector's, says how many are in use).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "search/rule_plan.hpp"

namespace meshfit::space_detail {

inline constexpr std::size_t kUnknown = RulePlan::kNone - 1;  // an outcome not yet found

// A row's run-length groups: (first failing rule, consecutive sizes failing it first).
using Groups = std::vector<std::pair<std::size_t, std::int64_t>>;

// A keyed level's outcomes for one key — the pass; ep; (ep, etp): the first failing rule among
// the level's rules that do not read b, and per micro-batch size among those that do, found
// without a bound when the key is first met; and, when the parent's row is the triple's, that
// row merged with its own.
struct Keyed {
  std::size_t first = kUnknown;
  std::vector<std::size_t> own_b;  // per size; empty until met (or no b-rule at the level)
  Groups own_groups;
  std::size_t own_min = RulePlan::kNone;
  std::vector<std::size_t> merged;
  Groups merged_groups;
  std::size_t merged_min = RulePlan::kNone;
  bool has_merged = false;

  void reset() {
    first = kUnknown;
    own_b.clear();
    own_groups.clear();
    own_min = RulePlan::kNone;
    merged.clear();
    merged_groups.clear();
    merged_min = RulePlan::kNone;
    has_merged = false;
  }
};

// Under one (ep, etp) node, for one first failing rule above the ZeRO level (`above`, kNone when
// nothing failed): the ZeRO settings decided at the level, counted per rule, and the others, in
// order, to walk.
struct ZeroOutcome {
  std::size_t above = RulePlan::kNone;
  std::vector<std::pair<std::size_t, std::int64_t>> decided;  // (rule, settings)
  std::vector<std::size_t> walk;
};

// Per (ep, etp) of a triple: each ZeRO setting's first failing rule at the ZeRO level, and the
// outcomes met so far (an (ep, etp) node meets one or two values of `above`).
struct ZeroSummary {
  bool made = false;
  std::vector<std::size_t> first;  // per ZeRO setting
  std::vector<ZeroOutcome> outcomes;
  std::size_t n_outcomes = 0;  // those of `outcomes` in use

  void reset() {
    made = false;
    first.clear();
    n_outcomes = 0;
  }
};

struct RuleWalkState {
  // Per level, the first failing rules per micro-batch size where the level makes its own row
  // (kLevels · sizes), and a keyed level's row when not kept with its key.
  std::vector<std::size_t> first_b;
  std::array<std::vector<std::size_t>, kLevels> own_rows;
  std::array<Groups, kLevels> groups;
  Groups no_failure;  // one group: no size fails
  // Per ZeRO setting, the first failing rule among the ZeRO level's rules that read only the
  // triple and (z, G); per (ep, etp, ZeRO setting), among the others when they read no more.
  std::vector<std::size_t> zero_first, rest_first;
  // Per first failing rule, the per-b count deferred to the etp level's row, and the rules touched.
  std::vector<std::int64_t> zero_credit;
  std::vector<std::size_t> zero_credited;
  std::array<std::vector<Keyed>, kLevels> keyed;
  std::array<std::size_t, kLevels> n_keyed{};  // those of keyed[L] in use
  std::vector<std::size_t> all_zero_indices;
  std::vector<ZeroSummary> zero_summaries;
  std::size_t n_summaries = 0;      // those of zero_summaries in use
  std::vector<std::size_t> walk_b;  // the micro-batch sizes to visit under a ZeRO setting

  // n keyed entries at `level`, each reset.
  void use_keyed(int level, std::size_t n) {
    auto& k = keyed[static_cast<std::size_t>(level)];
    if (k.size() < n) k.resize(n);
    for (std::size_t i = 0; i < n; ++i) k[i].reset();
    n_keyed[static_cast<std::size_t>(level)] = n;
  }
  void use_summaries(std::size_t n) {
    if (zero_summaries.size() < n) zero_summaries.resize(n);
    for (std::size_t i = 0; i < n; ++i) zero_summaries[i].reset();
    n_summaries = n;
  }
  // A new outcome of `summary`, its vectors emptied (storage kept).
  static ZeroOutcome& add_outcome(ZeroSummary& summary) {
    if (summary.outcomes.size() == summary.n_outcomes) summary.outcomes.emplace_back();
    ZeroOutcome& o = summary.outcomes[summary.n_outcomes++];
    o.decided.clear();
    o.walk.clear();
    return o;
  }
};

}  // namespace meshfit::space_detail
