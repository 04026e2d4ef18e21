#include "estimators/layer_activations.hpp"

#include <algorithm>
#include <string>

#include "estimators/backward_transients.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

RecomputeSwitches switches_for(const Run& run, const Strategy& s) {
  const RecomputeSwitches& set = run.options.switches;
  if (set.rule == RecomputeSwitches::Rule::fixed) return set;
  const bool fa = run.flash_attention, sp = s.sigma() > 1;
  RecomputeSwitches sw{!(!fa && sp), true, fa, true, !fa, !sp, !(set.select_comm && sp), !sp};
  return sw;
}

CensusPerToken per_token(const Census& c, const Run& run, const Strategy& s, double g_kv) {
  const double sigma = static_cast<double>(s.sigma()), tp = static_cast<double>(s.tp);
  const RecomputeSwitches sw = switches_for(run, s);
  CensusPerToken t;
  t.kept_plain = c.saved_total() / sigma + c.saved_tp_total() / tp + g_kv;
  t.held = c.working / sigma + c.working_tp / tp + g_kv;
  double sel = 0, sel_tp = 0;
  for (std::size_t op = 0; op < kOpCount; ++op) {
    if (!op_kept(static_cast<Op>(op), sw)) continue;
    sel += c.saved[op] - (sw.dense_mlp ? 0 : c.mlp_saved[op]);
    sel_tp += c.saved_tp[op] - (sw.dense_mlp ? 0 : c.mlp_saved_tp[op]);
  }
  if (sw.ffAct && !sw.moe_act) {
    sel += -c.moe_act;
    sel_tp += -c.moe_act_tp;
  }
  if (!sw.softmax) t.kept_sel_beyond_held = c.core_attn_checkpoint_tp / tp;  // core attention rerun from its checkpoint
  // Gathered CP keys and values are kept when the attention's batched matmuls keep theirs.
  t.kept_sel = sel / sigma + sel_tp / tp + (sw.attBMM ? g_kv : 0) + t.kept_sel_beyond_held;
  if (run.options.selective_policy == SelectivePolicy::torchtitan_op_sac && c.sac_saved >= 0) {
    t.kept_sel = c.sac_saved / sigma + c.sac_saved_tp / tp + c.sac_unsplit;
    t.kept_sel_beyond_held = 0;
  }
  t.w_att_tp = c.w_att / tp;
  return t;
}

CensusPerToken per_token_measured(const MeasuredCensus& mc, const CensusPerToken& analytic, const Run& run,
                                  const Strategy& s, double g_kv) {
  const double sigma = static_cast<double>(s.sigma()), tp = static_cast<double>(s.tp);
  const RecomputeSwitches sw = switches_for(run, s);
  CensusPerToken t;
  t.kept_plain = mc.saved / sigma + mc.saved_tp / tp + g_kv;
  t.held = mc.working / sigma + mc.working_tp / tp + g_kv;
  t.w_att_tp = analytic.w_att_tp;  // kernel workspaces a measured census may not see (§9.2)
  if (mc.has_selective && sw == RecomputeSwitches::hyperparallel()) {  // rule 1
    t.kept_sel = mc.selective / sigma + mc.selective_tp / tp;
  } else if (mc.has_ops) {  // rule 2
    double sel = 0, sel_tp = 0;
    for (std::size_t op = 0; op < kMeasuredOps; ++op) {
      if (!op_kept(static_cast<Op>(op), sw)) continue;
      sel += mc.ops[op];
      sel_tp += mc.ops_tp[op];
    }
    t.kept_sel = sel / sigma + sel_tp / tp + (sw.attBMM ? g_kv : 0);
  } else {  // rule 3
    t.kept_sel = analytic.kept_sel;
    t.kept_sel_beyond_held = analytic.kept_sel_beyond_held;
  }
  return t;
}

LayerActivation layer_activation(const CensusPerToken& c, Recompute mode, double n_cp, double hidden, const Run& run,
                                 const Strategy& s) {
  LayerActivation a;
  switch (mode) {
    case Recompute::none:
      a.kept = n_cp * c.kept_plain;
      a.working = n_cp * std::max(0.0, c.held - c.kept_plain);
      break;
    case Recompute::selective:
      a.kept = n_cp * c.kept_sel;
      a.working = n_cp * std::max(0.0, c.held + c.kept_sel_beyond_held - c.kept_sel);
      break;
    case Recompute::full:
      // §7.6: only the layer input, SP-sharded; the backward recomputes and holds everything.
      a.kept = n_cp * run.options.beta_a * hidden / static_cast<double>(s.sigma());
      a.working = n_cp * c.held;
      break;
  }
  return a;
}

double embedding_kept(const Model& m, const Run& run, const Strategy& s, double n_cp) {
  const double drop = embedding_dropout(m, run) ? static_cast<double>(m.hidden) / static_cast<double>(s.sigma()) : 0;
  return n_cp * (run.options.token_id_bytes + drop);
}

double output_kept(const Model& m, const Run& run, const Strategy& s, double n_cp, double v_pad) {
  const RunOptions& o = run.options;
  const double h_sp = static_cast<double>(m.hidden) / static_cast<double>(s.sigma());
  const double vocab = o.vocab_parallel_loss ? v_pad / static_cast<double>(s.tp) : v_pad;
  // The projection's saved input: the SP shard, or the whole gathered sequence (DTensor TP).
  const double h_in = o.output_saves_gathered_input ? static_cast<double>(m.hidden) : h_sp;
  // A compiled loss keeps the logits themselves (the compiled region's input, β_a each) and one
  // logsumexp per token for its backward, instead of the eager fp32 log-probabilities; Transformer
  // Engine's cross-entropy keeps the logits, their gradient written into them (RunOptions).
  const double logits = o.compiled_loss || o.te_cross_entropy ? o.beta_a : o.logits_kept_bytes;
  return n_cp * (o.beta_n * h_sp + o.beta_a * h_in + logits * vocab + (o.compiled_loss ? 4 : 0));
}

KindActivation kind_activation(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, double n_cp,
                               double g_kv) {
  KindActivation k;
  k.census = per_token(analytic_census(m, run, s, ffn), run, s, g_kv);
  const std::string name =
      std::string(m.attention == AttentionKind::mla ? "mla" : "gqa") + (ffn == FfnKind::moe ? "_moe" : "_dense");
  if (const MeasuredCensus* mc = m.census_for(name)) k.census = per_token_measured(*mc, k.census, run, s, g_kv);
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    k.by_mode[static_cast<std::size_t>(mode)] =
        layer_activation(k.census, mode, n_cp, static_cast<double>(m.hidden), run, s);
  }
  return k;
}

OutputActivation output_activation(const Model& m, const Run& run, const Strategy& s, double n_cp, double v_pad) {
  OutputActivation a;
  a.kept = output_kept(m, run, s, n_cp, v_pad);
  a.logits = logits_transient(run, s, n_cp, v_pad);
  if (const MeasuredCensus* out = m.census_for("output")) {
    const double sigma = static_cast<double>(s.sigma());
    const double tp = static_cast<double>(s.tp);
    const double kept = out->saved / sigma + out->saved_tp / tp;
    a.kept = n_cp * kept;
    a.logits = n_cp * std::max(0.0, out->working / sigma + out->working_tp / tp - kept);
  }
  if (seed_rule(run, SeedConvention::seed_output)) a.kept = sapp_nd::output_node_kept(m, run, s);  // §17.5.7
  return a;
}

double mtp_depth_kept(const LayerActivation& layer, double n_cp, const Model& m, const Run& run, const Strategy& s) {
  if (seed_rule(run, SeedConvention::seed_output)) return layer.kept + sapp_nd::mtp_inputs_kept(m, run, s);
  return layer.kept + n_cp * 3 * run.options.beta_a * static_cast<double>(m.hidden) / static_cast<double>(s.sigma());
}

}  // namespace meshfit
