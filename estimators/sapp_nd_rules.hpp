// The sapp_nd_compat rules profile (`--rules sapp-nd`, docs/spec/memory-model.md §17): the
// seed's own body-layer expressions where the default rules depart from them (§17.3 items
// 1–14). Only the quantities that differ live here; rules_profile.hpp names each as a variant.
#pragma once

#include <cstdint>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit::sapp_nd {

// §17.2: SAPP-ND's derived degrees and the seed's shard factors.
struct Factors {
  double tp_exp = 1, dp_exp = 1, os_max_shard = 1;
  double os_ne = 1, g_ne = 1, os_e = 1, g_e = 1, os_sh = 1, g_sh = 1;
};
// `literal_etp` (§17.5.2, SeedConvention::expert_tp_literal): SAPP-ND's parser takes a stated
// `expert_model_parallel` as the expert TP degree whatever its value, so etp = 1 gives tp_exp = 1.
Factors factors(const Model& m, const Strategy& s, bool literal_etp = false);
// Ruling 5: the optimizer-shard degree tp·G/cp must be whole under this profile.
bool factors_whole(const Strategy& s);

// One layer's counts as the seed takes them: P_ne (model-total K/V heads, nothing replicated),
// P'_rt/ep (expert width divided by etp), P_sh.
struct Counts {
  double non_expert = 0, routed_per_ep = 0, shared = 0;
};
Counts counts(const Model& m, FfnKind ffn, const Strategy& s);

// Items 1 and 6: weights, gradients and optimizer state of one layer.
ModelStates layer_states(const Counts& c, const Factors& f, const Run& run);
// Item 7: the gradients a layer reduce-scatters, whole (as computed), in bytes.
double reduced_grads(const Counts& c, const Factors& f, const Strategy& s, const Run& run);
// Item 8: the seed's micro factors n(i,c) for the chunks of stage i.
std::vector<std::int64_t> micro_factors(const Strategy& s, std::int64_t stage);
// Item 10: clip(ℓ) and dpc(ℓ) of a fully recomputed layer (dpc in parameter elements, used as
// bytes, as the seed writes it).
double grad_clip_buffer(const Counts& c, const Factors& f, const Run& run);
double dp_comm_elements(const Counts& c, const Factors& f, const Strategy& s, bool model_has_experts);
// Item 11: the CP buffer with SAPP-ND's count of a node's CP members, min(cp, D).
double cp_buffer(const Model& m, const Run& run, const Strategy& s, std::int64_t devices_per_node);
// Item 12: gathered keys and values, (cp − 1)·2·n_kv·d_h·β_a/tp except under Ulysses.
double gathered_kv(const Model& m, const Run& run, const Strategy& s);
// Item 9: a fully recomputed layer keeps its input for the whole sequence (no /cp), per micro-batch.
double full_layer_input(const Model& m, const Run& run, const Strategy& s);
// §17.5.7 (SeedConvention::seed_output), per micro-batch: what the output node keeps
// (EvalTailSingle.activ_out_single: the final norm's input and the whole-vocabulary logits in the
// compute dtype over s·b tokens, shard_output_activ = 1), and what each MTP depth keeps besides
// its layer (EvalMTP.activ_mtp: its 3h inputs over s·b tokens and the embedding's activation).
double output_node_kept(const Model& m, const Run& run, const Strategy& s);
double mtp_inputs_kept(const Model& m, const Run& run, const Strategy& s);
// Item 14: φ = 0, no overheads but a fixed 1 GiB safety buffer.
Device overheads(Device d);

}  // namespace meshfit::sapp_nd
