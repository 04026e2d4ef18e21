#include "estimators/reference_step_time.hpp"

#include <algorithm>
#include <array>

#include "estimators/collectives.hpp"
#include "estimators/data_parallel_time.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/model_states.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/pipeline_hops.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/step_totals.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit {

namespace {

// One body layer of a kind in a recompute mode added to a stage (§7.2–§7.5): its compute, the
// communication it exposes (recompute repeating the forward's), its parameters and FSDP unit.
void add_layer(StageTime& st, StageParams& p, const LayerTime& t, const RankParams& params, Recompute mode) {
  const auto k = static_cast<std::size_t>(mode);
  st.forward += t.forward;
  st.backward += t.backward;
  st.weight_grad += t.weight_grad;
  st.recompute += t.recompute[k];
  st.comm_tp += t.tp + t.tp_recompute[k];
  st.comm_ep += t.ep + (mode == Recompute::full ? t.ep_forward : 0);
  st.ep_hidden += t.ep_hidden;
  st.comm_cp += t.cp + (t.recompute_repeats_cp[k] ? t.cp_forward : 0);
  p.P_d += params.non_expert + params.shared;
  p.P_e += params.routed;
  p.units += 1;
}

}  // namespace

TimeReport reference_step_time(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  const Device& d = cluster.device;
  const RunOptions& o = run.options;
  const PipelineLayout layout = make_layout(m, run, s);
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(s.tp);
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double n_tok = b * seq, shards = static_cast<double>(s.tp * s.cp);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  const double table = v_pad * h / tp;
  const bool split_ends = layout.vstages.front().stage != layout.head_stage;

  // The layer kinds (index 0 dense, 1 MoE) and their per-rank parameters (memory-model §4.9).
  const std::int64_t kv_counted = m.attention == AttentionKind::gqa ? std::max(m.kv_heads, s.tp) : m.kv_heads;
  std::array<LayerTime, 2> times{layer_time(m, run, d, s, FfnKind::dense), LayerTime{}};
  std::array<RankParams, 2> params{rank_params(layer_params(m, FfnKind::dense, kv_counted), s), RankParams{}};
  times[1] = m.is_moe() ? layer_time(m, run, d, s, FfnKind::moe) : times[0];
  params[1] = m.is_moe() ? rank_params(layer_params(m, FfnKind::moe, kv_counted), s) : params[0];
  const KernelScales eta = kernel_scales(run, d, s);
  const double logits_f = kernel_time(d, eta.other, logits_flops(m, n_tok, v_pad) / shards);
  const double eh_f = kernel_time(d, eta.linear, mtp_projection_flops(m, n_tok) / shards);
  const LossTime loss = loss_time(run, d, s, v_pad);  // the cross-entropy's HBM traffic (§7.3)

  const double p2p = pipeline_hop_time(m, run, d, s);  // PP hops (§7.5, §7.6)

  const Recompute rest_mode = s.recompute == Recompute::full ? o.recompute_rest : s.recompute;
  const DataParallelGroups groups = data_parallel_groups(m, run, d, s, split_ends);
  TimeReport r;
  for (std::int64_t i = 0; i < s.pp; ++i) {
    StageTime st;
    st.stage = i;
    StageParams p;
    for (std::int64_t c = 0; c < s.vpp; ++c) {
      const std::int64_t u = layout.vstage_of(i, c);
      const VirtualStage& vs = layout.vstages[static_cast<std::size_t>(u)];
      for (std::int64_t l = 0; l < vs.layers; ++l) {
        const std::size_t kind = m.layer_ffn[static_cast<std::size_t>(vs.first_layer + l)] == FfnKind::moe ? 1 : 0;
        const bool full = s.recompute == Recompute::full && l < vs.full_recompute;
        add_layer(st, p, times[kind], params[kind], full ? Recompute::full : rest_mode);
      }
      if (u == 0) {
        p.embedding = true;
        p.P_d += table + static_cast<double>(m.positions) * h;
        p.units += 1;
      }
      if (u == nv - 1) {
        // Logits: one forward kernel and two backward ones per loss, and the loss's own traffic;
        // MTP depths are body layers of the head's stage, with their eh_proj and their own logits
        // (ruling 9).
        p.head = true;
        for (std::int64_t k = 0; k < 1 + m.mtp_depths; ++k) {
          st.forward += logits_f + loss.forward;
          st.backward += 2 * logits_f + loss.backward;
          st.weight_grad += logits_f;
        }
        const std::size_t mtp_kind = !m.layer_ffn.empty() && m.layer_ffn.back() == FfnKind::moe ? 1 : 0;
        for (std::int64_t depth = 0; depth < m.mtp_depths; ++depth) {
          add_layer(st, p, times[mtp_kind], params[mtp_kind], s.recompute);
          st.forward += eh_f;
          st.backward += 2 * eh_f;
          st.weight_grad += eh_f;
          p.P_d += static_cast<double>(mtp_extra_split(m)) / tp + static_cast<double>(mtp_extra_repl(m));
        }
        p.P_d += (m.tie && !split_ends ? 0 : table) + static_cast<double>(m.norm_params());
        if ((m.tie || m.mtp_depths > 0) && split_ends) p.P_d += table;
        p.units += 1;
      }
    }
    st.comm_pp = p2p;
    data_parallel_time(st, p, groups, m, run, d, s);
    r.stages.push_back(st);
  }
  step_from_stages(r, run, d, s, 3 * static_cast<double>(run.global_batch) * sequence_flops(m, seq));
  return r;
}

}  // namespace meshfit
