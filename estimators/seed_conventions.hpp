// The SAPP-ND conventions `--rules sapp-nd` reproduces beyond the seed's body-layer terms
// (docs/spec/memory-model.md §17.5): each a named switch, all on under that profile, any one
// turned off with `--rules sapp-nd:-NAME` (cli.md). The default profile reads none of them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "estimators/run.hpp"

namespace meshfit {

enum class SeedConvention : std::uint8_t {
  resident_comm,       // §17.5.1: per-layer communication buffers held as activations
  expert_tp_literal,   // §17.5.2: `expert_model_parallel: 1` read as expert TP 1 (a parser bug)
  seed_attention,      // §17.5.3: the attention activations of SAPP-ND's own formulas
  table_shard,         // §17.5.4: embedding and output tables sharded as MindSpore shards them
  last_node_overhead,  // §17.5.5: the stage's last node re-added for the backward
  no_clip_case,        // §17.5.6: the full-recompute clipping case never applied (as shipped)
  seed_output,         // §17.5.7: the output node keeps whole-vocabulary logits (and MTP inputs)
  no_step_phase,       // §17.5.8: no optimizer-step phase
};
inline constexpr std::size_t kSeedConventionCount = 8;

inline constexpr std::array<std::string_view, kSeedConventionCount> kSeedConventionNames{
    "resident_comm",      "expert_tp_literal", "seed_attention", "table_shard",
    "last_node_overhead", "no_clip_case",      "seed_output",    "no_step_phase"};

inline std::optional<SeedConvention> seed_convention_named(std::string_view name) {
  for (std::size_t i = 0; i < kSeedConventionCount; ++i) {
    if (kSeedConventionNames[i] == name) return static_cast<SeedConvention>(i);
  }
  return std::nullopt;
}

// Whether the run prices convention `c`: only under --rules sapp-nd, and not switched off.
inline bool seed_rule(const Run& run, SeedConvention c) {
  return run.rules == Rules::sapp_nd && (run.seed_off & (1U << static_cast<unsigned>(c))) == 0;
}

// The --rules text that selects the run's profile and conventions: "default", "sapp-nd", or
// "sapp-nd:-NAME,-NAME" (the conventions off, in their order above).
inline std::string rules_text(const Run& run) {
  if (run.rules != Rules::sapp_nd) return "default";
  std::string off;
  for (std::size_t i = 0; i < kSeedConventionCount; ++i) {
    if ((run.seed_off & (1U << i)) == 0) continue;
    off += (off.empty() ? ":-" : ",-") + std::string(kSeedConventionNames[i]);
  }
  return "sapp-nd" + off;
}

}  // namespace meshfit
