#include "estimators/sapp_nd_stage.hpp"

#include <algorithm>

#include "estimators/activation_census.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/rules_profile.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/seed_conventions.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit::sapp_nd {

namespace {

// _CostModelParser.config_comm_flag: comm_d_non_exp, 0 without data parallelism or optimizer
// sharding, else 2 (ZeRO-1/2 in MindSpore terms) or 3 (with gradient sharding). A factor, not a flag.
double dp_level(const Strategy& s) {
  if (s.dp == 1 || s.zero == 0) return 0;
  return s.zero >= 2 ? 3 : 2;
}

// CostModelParserMindformers.config_shard_emb with vocab_emb_dp (MindFormers' default).
double embed_shard(const Strategy& s) { return static_cast<double>(s.pp == 1 ? s.dp : s.tp * s.dp); }

// The gather switch of a selective layer (rec_coeff of EvalUtils); 1 for any other layer.
double gather_coeff(const Run& run, const Strategy& s) {
  return s.recompute == Recompute::selective && !switches_for(run, s).gather ? 0 : 1;
}

double n_ff(const Model& m) { return m.gated ? 3 : 2; }  // n_ffMM of arch_hooks' default transformer

}  // namespace

// EvalLayerComm.dp_comm_layer, tp_comm_layer, cp_comm_layer, ep_comm_layer_balanced.
double layer_comm(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, bool full, double micro) {
  const Factors f = factors(m, s, seed_rule(run, SeedConvention::expert_tp_literal));
  const Counts counts = sapp_nd::counts(m, ffn, s);
  const bool moe = ffn == FfnKind::moe;
  const double dp = dp_comm_elements(counts, f, s, moe);
  if (full) return dp;  // FULL_REC_LAYER's comm is its dp entry only
  const double h = static_cast<double>(m.hidden), tokens = static_cast<double>(run.seq * s.micro_batch);
  const double tp = static_cast<double>(s.tp), cp = static_cast<double>(s.cp), ep = static_cast<double>(s.ep);
  const double beta = run.options.beta_a, gather = gather_coeff(run, s);
  double tpc = 0;
  if (s.tp > 1) {
    if (moe) {
      // With experts the volume is a weight-sized figure, without tokens or micro-batches.
      const double ffn_width = static_cast<double>(m.experts) / ep * static_cast<double>(m.expert_ffn) +
                               static_cast<double>(m.shared_experts * m.shared_expert_ffn);
      tpc = h * h * beta * 4 + h * beta * n_ff(m) * ffn_width;
    } else {
      tpc = tokens * micro * (h + static_cast<double>(m.ffn));  // 0.25·n_gather = 1; elements
    }
    tpc *= gather / cp;
  }
  double cpc = 0;
  if (s.cp > 1) {
    const double rec = gather * (s.pp == 1 ? 1 : 0);
    const double attn = s.cp_algo == CpAlgo::ulysses ? (0.5 * rec + 0.5) : (rec + 0.5);
    const double width = moe ? static_cast<double>(m.expert_ffn) : static_cast<double>(m.ffn);
    cpc = 2 * tokens * attn * 4 * h / tp + 2 * tokens * n_ff(m) * width / tp;
  }
  double epc = 0;
  if (moe && s.ep > 1) {
    epc = micro * static_cast<double>(m.top_k) * tokens / cp * (ep - 1) / ep * h * beta * 2;
  }
  return std::max({dp, tpc, cpc}) + epc;
}

// EvalHead.dp_comm_embed and tp_comm_embed; the node's comm is the larger.
double embedding_comm(const Model& m, const Run& run, const Strategy& s) {
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  const double tp = static_cast<double>(s.tp), cp = static_cast<double>(s.cp);
  const double dp = dp_level(s) * h * v / (embed_shard(s) * cp);
  const double tokens = static_cast<double>(run.seq * s.micro_batch);
  const double tpc = s.tp > 1 ? gather_coeff(run, s) * tokens * h * (tp - 1) / (tp * cp) : 0;
  return std::max(dp, tpc);
}

// EvalTail.comm_output: comm_out_single and EvalMTP.comm_mtp (each depth's eh_proj and norms,
// embedding and output again, and the embedding node's own dp term).
double output_comm(const Model& m, const Strategy& s) {
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  const double tp = static_cast<double>(s.tp), cp = static_cast<double>(s.cp);
  const double level = dp_level(s);
  const double single = level * (h * v + v) / (tp * cp);
  const double n_mtp = static_cast<double>(m.mtp_depths);
  const double embed_dp = level * h * v / (embed_shard(s) * cp);
  const double mtp = n_mtp * (level * (2 * h * h + 4 * h) / (tp * cp) + level * h * v / (tp * cp) + embed_dp +
                              level * (h * v + v) / (tp * cp) + single);
  return single + mtp;
}

SeedStage seed_stage(const Model& m, const Run& run, const Strategy& s, const PipelineLayout& layout,
                     std::int64_t stage, const std::vector<std::int64_t>& inflight) {
  SeedStage out;
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  const double g_kv = rules_profile(run).gathered_kv(m, run, s);
  auto ffn_of = [&](std::int64_t layer) { return m.layer_ffn[static_cast<std::size_t>(layer)]; };
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  const FfnKind mtp_ffn = m.layer_ffn.empty() ? FfnKind::dense : m.layer_ffn.back();
  // The stage's last node (_BackwardOverhead: the last chunk's last node, re-evaluated as a
  // layer that is not recomputed, at one micro-batch), and its comm.
  double last_act = 0, last_comm = 0;
  for (std::int64_t c = 0; c < s.vpp; ++c) {
    const std::int64_t u = layout.vstage_of(stage, c);
    if (u < 0) continue;
    const VirtualStage& vs = layout.vstages[static_cast<std::size_t>(u)];
    const auto ci = static_cast<std::size_t>(c);
    // SAPP-ND's ctx.micro_factor is at least 1 (_Backbone._inner_dynamic_mem).
    const double micro = static_cast<double>(std::max<std::int64_t>(1, ci < inflight.size() ? inflight[ci] : 1));
    const bool last_chunk = c == s.vpp - 1;
    if (u == 0) out.comm += embedding_comm(m, run, s);
    for (std::int64_t l = 0; l < vs.layers; ++l) {
      const bool full = s.recompute == Recompute::full && l < vs.full_recompute;
      out.comm += layer_comm(m, run, s, ffn_of(vs.first_layer + l), full, micro);
    }
    if (last_chunk && vs.layers > 0) {
      const FfnKind ffn = ffn_of(vs.first_layer + vs.layers - 1);
      last_act = kind_activation(m, run, s, ffn, n_cp, g_kv).by_mode[static_cast<std::size_t>(Recompute::none)].kept;
      last_comm = layer_comm(m, run, s, ffn, false, 1);
    }
    if (u == nv - 1) {
      // MTP depths follow the body layers, in the mode of the chunk's last layer; then the output.
      const bool mtp_full = s.recompute == Recompute::full && vs.layers > 0 && vs.full_recompute >= vs.layers;
      for (std::int64_t d = 0; d < m.mtp_depths; ++d) out.comm += layer_comm(m, run, s, mtp_ffn, mtp_full, micro);
      out.comm += output_comm(m, s);
      if (last_chunk) {
        const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
        last_act = output_activation(m, run, s, n_cp, v_pad).kept * static_cast<double>(1 + m.mtp_depths);
        last_comm = output_comm(m, s);
        if (m.mtp_depths > 0) {  // the output node brings the last MTP depth with it
          const LayerActivation none =
              kind_activation(m, run, s, mtp_ffn, n_cp, g_kv).by_mode[static_cast<std::size_t>(Recompute::none)];
          last_act += mtp_depth_kept(none, n_cp, m, run, s);
          last_comm += layer_comm(m, run, s, mtp_ffn, false, 1);
        }
      }
    }
  }
  out.overhead = last_act;
  out.overhead_comm = last_comm;
  return out;
}

void apply_seed_stage(StageMemory& st, const Model& m, const Run& run, const Strategy& s, const PipelineLayout& layout,
                      const std::vector<std::int64_t>& inflight) {
  const bool comm = seed_rule(run, SeedConvention::resident_comm);
  const bool overhead = seed_rule(run, SeedConvention::last_node_overhead);
  if (!comm && !overhead) return;
  const SeedStage seed = seed_stage(m, run, s, layout, st.stage, inflight);
  if (comm) st.seed_comm = seed.comm + (overhead ? seed.overhead_comm : 0);
  if (overhead) {
    // _BackwardOverhead adds the node to the stage's dynamic memory; SAPP-ND has no other transient.
    st.tr_layer = seed.overhead;
    st.transient = seed.overhead;
  }
}

}  // namespace meshfit::sapp_nd
