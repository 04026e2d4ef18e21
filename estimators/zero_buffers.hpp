// What the ZeRO stage and FSDP add to a stage's backward and optimizer step beyond the model
// states of §6: the gathered parameters and gradient buffers of one layer (Pg, Rg of
// docs/spec/memory-model.md §9.1), the FSDP gather transient (§9.4), the gradient bucket (§9.5),
// the optimizer-step transient (§9.9) and deferred gradients (ruling 10). Each is one function,
// read by the reference model and by the search's evaluator alike.
#pragma once

#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// One body layer's model states (§6) and buffers — Pg and Rg (§9.1), and under the seed's layer
// counts (rules_profile.hpp) its own states, Rg and clipping figures (§17.3 items 1, 6, 7, 10) —
// given its per-rank parameters: what every layer of a kind holds under a ZeRO setting.
struct LayerStates {
  ModelStates states;
  double gathered_params = 0;    // Pg
  double reduce_buffers = 0;     // Rg
  double clip = 0, dp_comm = 0;  // the seed's gradient-clipping buffer and DP comm (item 10)
};
LayerStates layer_states(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, const RankParams& layer,
                         const ZeroDivisors& z);

// Pg (§9.1): under per-layer FSDP gathering, a layer's own gathered parameters and those of the
// layers prefetched with it (fsdp_prefetch_layers), in the gather dtype.
double gathered_layer_params(const RankParams& layer, const Run& run);

// Rg (§9.1): with ZeRO ≥ 2, a layer's gradients as produced and reduce-scattered — only the parts
// another rank shards (G > 1, or G_e > 1 for routed experts) — twice when the reduction overlaps
// the backward (one bucket filling while another is in flight). 0 below ZeRO 2.
double reduce_scatter_buffers(const RankParams& layer, const ZeroDivisors& z, const Run& run, const Strategy& s);

// Tr_fsdp (§9.4): the largest gather in flight — a body layer's Pg, or on the stages holding the
// embedding or an untied (or split) output table, that table with its prefetch.
double fsdp_gather_transient(double largest_layer_gather, bool embedding, bool head, bool tied, bool split_ends,
                             double table_params, const Run& run);

// Tr_bucket (§9.5): with ZeRO ≥ 2 the largest layer's Rg, else the framework's gradient bucket.
double grad_bucket_transient(double largest_reduce_buffers, const Strategy& s, const Run& run);

// §9.9: the optimizer step's temporaries (per optimizer element; none when the optimizer is
// offloaded), and with ZeRO 1/2 the all-gather bucket that rebuilds the updated parameters.
double optimizer_step_transient(const ModelStates& states, const Strategy& s, const Run& run);

// Ruling 10: with deferred gradient sync every gradient is held unsharded, in the reduce dtype,
// from its chunk's first backward to its last reduce-scatter: of the stage's unsharded elements,
// or of its largest chunk's where the chunks hold theirs one at a time (defers_chunk_by_chunk).
double deferred_grad_bytes(double unsharded_elements, const Run& run);

}  // namespace meshfit
