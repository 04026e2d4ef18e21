#include "search/pruning_passes.hpp"

#include <algorithm>
#include <stdexcept>

namespace meshfit {

namespace {
constexpr std::array<std::string_view, kPruningPassCount> kNames{
    "rule_subtrees",         "weighted_vpp_tails", "micro_batch_bisection", "micro_batch_overflow",
    "zero_setting_overflow", "dominance_floor",    "top_k_floor",
};
}  // namespace

std::string_view pass_name(PruningPass p) { return kNames[static_cast<std::size_t>(p)]; }

std::optional<PruningPass> pass_named(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<PruningPass>(i);
  }
  return std::nullopt;
}

std::string pass_names() {
  std::string out;
  for (const auto& n : kNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

PruningPasses switch_off(PruningPasses passes, std::string_view list) {
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string_view item = list.substr(at, comma - at);
    if (!item.empty()) {
      const auto p = pass_named(item);
      if (!p)
        throw std::invalid_argument("unknown pruning pass '" + std::string(item) + "' (expected one of " +
                                    pass_names() + ")");
      passes = passes.without(*p);
    }
    at = comma + 1;
  }
  return passes;
}

}  // namespace meshfit
