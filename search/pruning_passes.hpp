// The search's pruning devices, each a named pass behind one gate (as DuckDB runs its optimizer
// passes): every one is provable — the search's output (front, top-k, counts) is that of the
// plain search with it off — and each can be switched off alone (`search --prune-off NAME,...`),
// which tests/search/naive_search_test.cpp does one by one against a brute-force search.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace meshfit {

enum class PruningPass : std::uint8_t {
  // The enumeration (search_space.hpp): a subtree whose every candidate's first failing rule is
  // known is credited to that rule without a visit (rule_plan.hpp, ruling 7).
  rule_subtrees,
  // The enumeration: the H12 tail of vpp values that differ in nothing the rules read is
  // enumerated once, weighted (triple_domains.hpp).
  weighted_vpp_tails,
  // A micro-batch run's fitting prefix found by bisection: at fixed gb the peak is non-decreasing
  // in b (memory-model.md §15, checked per run by peak_rises_with_micro_batch).
  micro_batch_bisection,
  // Where runs are scored in turn (the cloud, best-only, no bisection): once a b does not fit, the
  // larger b of its run are counted without an estimate (the same property).
  micro_batch_overflow,
  // A ZeRO setting whose model states and overheads alone overflow is skipped in every recompute
  // mode and micro-batch size (none of them reads those, and the peak is at least their sum).
  zero_setting_overflow,
  // A fitting strategy whose memory floor and step-time floor (step_time_evaluator.hpp) show it
  // dominated by a front point and slower than the k-th fastest is counted without its estimate.
  dominance_floor,
  // Best-only (meshfit check): a strategy whose step-time floor is above the k-th fastest found
  // is not estimated at all.
  top_k_floor,
};
inline constexpr std::size_t kPruningPassCount = 7;

std::string_view pass_name(PruningPass p);
std::optional<PruningPass> pass_named(std::string_view name);
std::string pass_names();  // "rule_subtrees, weighted_vpp_tails, ..." for messages

class PruningPasses {
 public:
  static PruningPasses all() { return PruningPasses((1u << kPruningPassCount) - 1); }
  static PruningPasses none() { return PruningPasses(0); }
  // The one gate every pruning device goes through.
  bool enabled(PruningPass p) const { return (bits_ >> static_cast<unsigned>(p) & 1u) != 0; }
  PruningPasses without(PruningPass p) const { return PruningPasses(bits_ & ~(1u << static_cast<unsigned>(p))); }
  PruningPasses with(PruningPass p) const { return PruningPasses(bits_ | 1u << static_cast<unsigned>(p)); }
  bool operator==(const PruningPasses&) const = default;

 private:
  explicit PruningPasses(std::uint32_t bits) : bits_(bits) {}
  std::uint32_t bits_;
};

// "a,b": the passes listed switched off from `passes`; std::invalid_argument names an unknown one.
PruningPasses switch_off(PruningPasses passes, std::string_view list);

}  // namespace meshfit
