// The hard validity rules H1–H25 of docs/spec/search-and-time.md §3.1, and the Ulysses degree
// of hybrid CP (§2.4). The memory model refuses exactly the strategies these rules reject
// (memory-model.md §14), so every strategy the search counts as valid is priced.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

enum class HardRule : std::uint8_t {
  ok,
  H1,
  H2,
  H3,
  H4,
  H5,
  H6,
  H7,
  H8,
  H9,
  H10,
  H11,
  H12,
  H12b,
  H13,
  H14,
  H15,
  H16,
  H17,
  H18,
  H19,
  H20,
  H21,
  H22,
  H23,
  H24,
  H25,
  S1,  // --rules sapp-nd: m ≥ pp when pp > 1 (SAPP-ND's search always applies it; memory-model.md §17.1)
  S2   // --rules sapp-nd: the optimizer-shard degree tp·G/cp is whole (ruling 5)
};

// Histogram slots of the hard rules (HardRule's values, ok included); the policies follow them.
inline constexpr std::size_t kHardRuleSlots = static_cast<std::size_t>(HardRule::S2) + 1;

const char* rule_id(HardRule r);
// A rule's name as the counts print it ("chunks_have_layers" for H12): what it asks, in a word.
const char* rule_name(HardRule r);

// §2.4: the largest divisor cp_u of cp with 2 ≤ cp_u < cp, (a/tp) mod cp_u = 0,
// n_kv mod (tp·cp_u) = 0 when `kv_divisible` (policy P9), and tp·cp_u ≤ D; 0 if none.
std::int64_t hybrid_ulysses_degree(const Model& model, const Strategy& s, std::int64_t devices_per_node,
                                   bool kv_divisible = true);

// Padded vocabulary V_pad = ⌈V/(q_V·tp)⌉·q_V·tp (search-and-time.md §2.2).
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t pad_multiple, std::int64_t tp);

// The first hard rule `s` breaks, in table order (HardRule::ok if none). The strategy must already
// have its derived fields filled (dp, m, G, cp_u). Allocation-free.
HardRule first_broken_rule(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);

// The hard rules in the order of the table (§3.1), the order in which they are checked.
std::span<const HardRule> hard_rule_order();

// Whether `s` satisfies one rule, and every rule it breaks in table order (for `explain`).
bool rule_holds(HardRule r, const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);
std::vector<HardRule> broken_rules(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);

// A sentence naming the rule, the symbols and their values, for error messages.
std::string explain_rule(HardRule r, const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);

}  // namespace meshfit
