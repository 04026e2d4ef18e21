// Layers over virtual pipeline stages, their (stage, chunk), the ends of the model and the
// fully recomputed layers (docs/spec/memory-model.md §5, the single source of the layout).
#pragma once

#include <cstdint>
#include <vector>

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct VirtualStage {
  std::int64_t first_layer = 0;     // first body layer, model order
  std::int64_t layers = 0;          // body layers held
  std::int64_t stage = 0;           // pipeline rank i
  std::int64_t chunk = 0;           // chunk c on that rank
  std::int64_t full_recompute = 0;  // its first this-many layers are fully recomputed
};

struct PipelineLayout {
  std::vector<VirtualStage> vstages;  // in model order, size nv
  std::int64_t head_stage = 0;        // the stage of virtual stage nv − 1 (§5.3)
  std::int64_t pp = 0;                // pipeline stages
  bool dualpipev = false;             // virtual stages placed as a V (§5.2)

  // Virtual stage index held as chunk c of stage i (−1: none): the inverse of make_layout's
  // placement, u = chunk·pp + stage, or the V of DualPipeV (§5.2). Inline: the estimators' hot path.
  std::int64_t vstage_of(std::int64_t stage, std::int64_t chunk) const {
    const auto nv = static_cast<std::int64_t>(vstages.size());
    if (pp <= 0 || stage < 0 || stage >= pp || chunk < 0) return -1;
    const std::int64_t u = dualpipev ? (chunk == 0 ? stage : chunk == 1 ? 2 * pp - 1 - stage : nv) : chunk * pp + stage;
    return u < nv ? u : -1;
  }
  std::int64_t stage_layers(std::int64_t stage) const;
};

// Slots per virtual stage by §5.1 rules 2–3; false if the counts cannot be laid out (H12b).
bool layout_counts_valid(const Model& model, const Run& run, const Strategy& s);
PipelineLayout make_layout(const Model& model, const Run& run, const Strategy& s);
// Everything make_layout reads: two equal keys give the same layout.
struct LayoutKey {
  std::int64_t layers = -1, first_stage = 0, last_stage = 0, pp = 0, vpp = 0, recompute_layers = 0;
  bool account_embedding = false, account_loss = false, full = false;
  Schedule schedule = Schedule::none;
  std::vector<std::int64_t> per_vstage, full_per_vstage;
  bool operator==(const LayoutKey&) const = default;
};
// Sets `key` to (model, run, s)'s; false when it already was (the layout made from it stands).
// `same_model_and_run`: the key was last set from this model and run (the caller knows), so only
// the strategy's fields are compared.
bool update_layout_key(LayoutKey& key, const Model& model, const Run& run, const Strategy& s,
                       bool same_model_and_run = false);

// The same into `out`, reusing its storage (no allocation once warm): the estimators' hot path.
void make_layout_into(PipelineLayout& out, const Model& model, const Run& run, const Strategy& s);

}  // namespace meshfit
