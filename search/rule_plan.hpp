// The validity rules laid out along the enumeration's loops. Each rule (hard rules in table order,
// then the enabled policies) is evaluated once, at the outermost loop where every dimension it
// reads is fixed; rules that also read the micro-batch size are evaluated there once per b. A
// candidate's first failing rule is then the smallest index found on its path, so a leaf costs no
// rule evaluation, and a subtree whose first failure is already known is skipped whole.
// Ruling 7 of search-and-time.md: attribution is exactly as if every candidate were checked.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "estimators/strategy_rules.hpp"
#include "search/policies.hpp"

namespace meshfit {

struct SearchSpace;
struct Strategy;

// The enumeration's loops, outermost first; `leaf` is the recompute mode (which no rule reads).
enum Level : int { triple_level = 0, sp_level, algo_level, pass_level, ep_level, etp_level, zero_level, leaf_level };
inline constexpr int kLevels = 8;

// The Dim bits (policies.hpp) of the strategy fields a hard rule reads; dp and m count as read
// through tp, cp, pp and the micro-batch size (they derive from them); cp_u derives from cp_algo.
std::uint32_t hard_rule_reads(HardRule r);

struct PlannedRule {
  std::size_t slot;  // histogram slot (slot_index)
  int level;         // the loop where its dimensions other than b are fixed
  bool reads_b;      // evaluated per micro-batch size
};

struct RulePlan {
  static constexpr std::size_t kNone = SIZE_MAX;
  std::vector<PlannedRule> rules;             // table order
  std::array<std::size_t, kLevels> deeper{};  // index of the first rule whose level is below L
  // Indices into `rules` (ascending) of the rules of a level, [2·level + reads_b].
  std::array<std::vector<std::size_t>, 2 * kLevels> at{};
  // The ZeRO level's rules without b split by what else they read: `zero_fixed` only the triple
  // and the ZeRO setting (z, G, offload) — their outcome per ZeRO setting is found once per triple — `zero_rest` also
  // the loops between (ep, etp, ...). Together they are at[2·zero_level].
  std::vector<std::size_t> zero_fixed, zero_rest;
  // Every zero_rest rule reads only the triple, ep, etp and (z, G): its outcome per (ep, etp, z, G)
  // holds under every (sp, CP algorithm, pass) and is found once per triple.
  bool zero_rest_reads_experts_only = true;
  // Per level, true when none of its rules reads a loop between the triple and it other than
  // its own key's — the pass for the pass level, ep for the ep level, (ep, etp) for the etp
  // level (and b, per size): its outcome under one key then holds under every value of the
  // loops between, and is found once per key and triple.
  std::array<bool, kLevels> keyed{};
};

// `etp_domain_ok`: every etp the enumeration takes passes H5's expert-width clause, so H5 is
// decided by its tp clause at the triple. A dense model's ep = etp = 1 throughout.
RulePlan make_rule_plan(const SearchSpace& space, bool etp_domain_ok);

// The first failing rule index (into plan.rules, below `bound`) among the rules of `level` that
// read b (`per_b`) or do not; RulePlan::kNone if none fails.
std::size_t first_failing(const SearchSpace& space, const RulePlan& plan, int level, bool per_b, const Strategy& s,
                          std::size_t bound);
// The same over a list of rule indices (ascending).
std::size_t first_failing_in(const SearchSpace& space, const RulePlan& plan, const std::vector<std::size_t>& list,
                             const Strategy& s, std::size_t bound);

}  // namespace meshfit
