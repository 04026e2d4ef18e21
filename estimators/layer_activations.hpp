// Bytes one layer keeps per micro-batch and its backward working set, by recompute mode
// (docs/spec/memory-model.md §7.2, §7.6), and the ends of the model (§7.7).
#pragma once

#include <array>

#include "estimators/activation_census.hpp"
#include "estimators/measured_census.hpp"

namespace meshfit {

struct LayerActivation {
  double kept = 0;     // K_1: bytes kept per micro-batch
  double working = 0;  // X: backward working set beyond what is kept, at one micro-batch
};

// Per-token figures of one census under a strategy (§7.2), shared by every layer of the kind.
// The selective switches in force for `s`: the run's set, or the mindformers preset resolved with
// sel = 1 (the switches only act under selective recompute), fa = flash attention and SP > 1
// (memory-model.md §7.5's table: attBMM ¬(¬fa ∧ sp), softmax fa, headCast ¬fa, normOp ¬sp,
// gather ¬(sel_comm ∧ sp), ffAct ¬sp, the rest kept).
RecomputeSwitches switches_for(const Run& run, const Strategy& s);

struct CensusPerToken {
  double kept_plain = 0;  // saved/σ + saved_tp/tp + g_kv
  double kept_sel = 0;    // the kept ops of a selective layer (rule 2 of §7.2)
  double held = 0;        // working/σ + working_tp/tp + g_kv
  // Of kept_sel, what the census's held does not count: the fused QKV output a checkpoint of core
  // attention keeps (Census::core_attn_checkpoint_tp), alive through the layer's backward too.
  double kept_sel_beyond_held = 0;
  double w_att_tp = 0;  // W_att/tp
};
CensusPerToken per_token(const Census& c, const Run& run, const Strategy& s, double g_kv);

// §7.2 with a measured census: kept and held from the record; a selective layer keeps, in this
// order, the record's selective pair (under HyperParallel's switches, no gathered K/V), its kept
// ops, or what the analytic census of the kind keeps (`analytic`).
CensusPerToken per_token_measured(const MeasuredCensus& mc, const CensusPerToken& analytic, const Run& run,
                                  const Strategy& s, double g_kv);

// One layer under recompute `mode`, for n_cp = b·s/cp tokens (§7.2; full: §7.6).
LayerActivation layer_activation(const CensusPerToken& c, Recompute mode, double n_cp, double hidden, const Run& run,
                                 const Strategy& s);

// K_emb and K_out (§7.7), per micro-batch.
double embedding_kept(const Model& m, const Run& run, const Strategy& s, double n_cp);
double output_kept(const Model& m, const Run& run, const Strategy& s, double n_cp, double v_pad);

// A layer kind's figures under a strategy, the same for every layer of the kind: its per-token
// census — the analytic one (§7.4), or the model's measured record of the kind (§7.1) — and one
// layer's kept bytes and working set in each recompute mode. `g_kv`: gathered K/V per token (§7.3).
struct KindActivation {
  CensusPerToken census;
  std::array<LayerActivation, 3> by_mode{};  // index: Recompute's value
};
KindActivation kind_activation(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, double n_cp,
                               double g_kv);

// The output layer (§7.7): K_out and Tr_logits (§9.3), from the model's own measured record of
// the output layer when it has one.
struct OutputActivation {
  double kept = 0, logits = 0;
};
OutputActivation output_activation(const Model& m, const Run& run, const Strategy& s, double n_cp, double v_pad);

// An MTP depth (§4.8, §7.7): a body layer of the last layer's kind, eh_proj and norms. It keeps
// its layer's K_1 (`layer`) and its two inputs and their concatenation, 3h per token.
double mtp_depth_kept(const LayerActivation& layer, double n_cp, const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit
