// How an estimate prices each term the SAPP-ND seed prices its own way (`--rules`, docs/spec/
// memory-model.md §17.3, items as numbered there): one named variant per such term, the whole set
// selected once per estimate (rules_profile). The standard profile is meshfit's physics; the
// sapp_nd profile the seed's conventions, whose expressions live in sapp_nd_rules.hpp. The
// models read the variants and never test the rules themselves.
#pragma once

#include <cstdint>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Item 9 (§7.6): what a fully recomputed layer keeps per micro-batch.
enum class FullLayerKept : std::uint8_t { own_k1, whole_sequence_input };
// Items 1, 6, 7, 10 (§6, §9.1, §9.9): a layer's model states, Rg and gradient-clipping figures.
enum class LayerCounts : std::uint8_t { per_rank, seed_counts };
// Item 8 (§8): the micro-batches in flight per chunk.
enum class InFlightCounts : std::uint8_t { schedule, seed_micro_factors };
// Item 13 (§9.1): which layers offer a Tr_layer candidate.
enum class LayerTransientRule : std::uint8_t { every_layer, stage_last_layer };

struct RulesProfile {
  const char* name;
  // Item 12 (§7.3): gathered keys and values per token.
  double (*gathered_kv)(const Model&, const Run&, const Strategy&);
  // Item 11 (§9.6): Tr_cp, the CP key/value buffers.
  double (*cp_buffer)(const Model&, const Run&, const Strategy&, std::int64_t devices_per_node);
  // Item 14 (§11): the device's overheads; null: the device's own.
  Device (*device)(Device);
  FullLayerKept full_layer_kept;
  LayerCounts layer_counts;
  InFlightCounts in_flight;
  LayerTransientRule layer_transient;
  // Item 10 (§9.9): the gradient-clipping copy priced whenever clipping is on (the seed), or only
  // under grad_clip_model: seed.
  bool clip_copy_always;
};

namespace rules_detail {
extern const RulesProfile standard_rules, sapp_nd_rules;
}  // namespace rules_detail

// Asked for several times per estimate: inline.
inline const RulesProfile& rules_profile(Rules rules) {
  return rules == Rules::sapp_nd ? rules_detail::sapp_nd_rules : rules_detail::standard_rules;
}
inline const RulesProfile& rules_profile(const Run& run) { return rules_profile(run.rules); }

// The device a run's estimate prices: the preset's, or with the profile's own overheads.
inline Device profile_device(const RulesProfile& rules, const Device& d) { return rules.device ? rules.device(d) : d; }

}  // namespace meshfit
