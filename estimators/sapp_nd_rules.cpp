#include "estimators/sapp_nd_rules.hpp"

#include <algorithm>
#include <numeric>

#include "estimators/backward_transients.hpp"
#include "estimators/parameter_counts.hpp"

namespace meshfit::sapp_nd {

// §17.2, from SAPP-ND's derive_expert_degrees and derive_optimizer_sharding.
Factors factors(const Model& m, const Strategy& s, bool literal_etp) {
  Factors f;
  const double tp = static_cast<double>(s.tp), dp = static_cast<double>(s.dp), cp = static_cast<double>(s.cp);
  const double G = static_cast<double>(s.shard_group);
  // SAPP-ND's _CostModelParser.config_dp_tp_exp takes the etp branch whenever the field is truthy:
  // MindFormers' `expert_model_parallel: 1` (CostModelParserMindformers) lands there too.
  if (s.etp > 1 || literal_etp) {
    f.tp_exp = static_cast<double>(s.etp);
    // The seed's integer degree (SAPP-ND divides whole device counts), clamped below.
    f.dp_exp = static_cast<double>((s.dp * s.tp * s.cp) / s.etp / s.ep);  // NOLINT(bugprone-integer-division)
  } else {
    f.tp_exp = s.tp * s.ep > s.dp * s.tp ? 1 : tp;
    f.dp_exp = static_cast<double>(s.dp >= s.ep ? s.dp / s.ep : (s.dp * s.tp) / s.ep);
  }
  // The seed's floor divisions give 0 where ep spans more ranks than it assumes (ep > dp·tp, the
  // experts then folded over cp): SAPP-ND would divide by that zero, and meshfit printed NaN and
  // inf model states. An expert data-parallel degree is at least one rank.
  f.dp_exp = std::max(f.dp_exp, 1.0);
  const bool has_op = s.zero >= 1, grad_shard = s.zero >= 2;
  f.os_max_shard = tp * G / cp;
  f.os_ne = has_op ? tp * G : tp * cp;
  f.g_ne = grad_shard ? dp * cp * tp : tp;
  f.os_e = (has_op ? f.dp_exp : 1) * cp * f.tp_exp;
  f.g_e = grad_shard ? f.os_e : f.tp_exp;
  const auto experts = static_cast<std::int64_t>(m.experts > 0 ? m.experts : 1);
  const auto shard = static_cast<std::int64_t>((has_op ? f.os_max_shard : 1) * f.tp_exp);
  f.os_sh = static_cast<double>(std::gcd(experts, std::max<std::int64_t>(1, shard)));
  f.g_sh = grad_shard ? f.os_sh : f.tp_exp;
  return f;
}

bool factors_whole(const Strategy& s) { return s.zero == 0 || (s.tp * s.shard_group) % s.cp == 0; }

Counts counts(const Model& m, FfnKind ffn, const Strategy& s) {
  const LayerParams p = layer_params(m, ffn, m.kv_heads);
  Counts c;
  c.non_expert = static_cast<double>(p.non_expert_split() + p.non_expert_repl());
  c.routed_per_ep =
      static_cast<double>(p.routed) / static_cast<double>(std::max<std::int64_t>(s.etp, 1)) / static_cast<double>(s.ep);
  c.shared = static_cast<double>(p.shared_split + p.shared_repl);
  return c;
}

ModelStates layer_states(const Counts& c, const Factors& f, const Run& run) {
  const Precision& p = run.precision;
  ModelStates st;
  const double os_elems = c.non_expert / f.os_ne + c.routed_per_ep / f.os_e + c.shared / f.os_sh;
  st.weights = p.beta_P * os_elems;  // item 1: one factor for parameters and optimizer state
  st.grads = p.beta_G * (c.non_expert / f.g_ne + c.routed_per_ep / f.g_e + c.shared / f.g_sh);
  st.optimizer_elements = os_elems;
  st.optimizer = run.options.offload_optimizer ? 0 : run.beta_opt() * os_elems;
  st.unsharded_elements = c.non_expert + c.routed_per_ep + c.shared;
  return st;
}

// Item 7 (SAPP-ND EvalUtils.reduced_grads): parts (size, computed over, kept over); a part is
// reduce-scattered iff it is kept over more ranks than it is computed over.
double reduced_grads(const Counts& c, const Factors& f, const Strategy& s, const Run& run) {
  const struct {
    double size, computed, kept;
  } parts[] = {{c.non_expert, static_cast<double>(s.tp), f.g_ne},
               {c.routed_per_ep, f.tp_exp, f.g_e},
               {c.shared, f.tp_exp, f.g_sh}};
  double whole = 0;
  for (const auto& part : parts) {
    if (part.size > 0 && part.kept > part.computed) whole += part.size / part.computed;
  }
  return run.precision.beta_G * whole;
}

// Item 8: SAPP-ND's pp_*_micro_factor with m_pp = min(pp, m).
std::vector<std::int64_t> micro_factors(const Strategy& s, std::int64_t i) {
  const std::int64_t m_pp = std::min(s.pp, s.num_microbatches);
  if (s.pp == 1) return std::vector<std::int64_t>(static_cast<std::size_t>(s.vpp), 1);
  switch (s.schedule) {
    case Schedule::gpipe: return {s.pp};
    case Schedule::dualpipev: return {2 * m_pp - 1 - i, i};
    case Schedule::interleaved_1f1b: {
      std::vector<std::int64_t> n(static_cast<std::size_t>(s.vpp), m_pp);
      std::int64_t x = m_pp - i - 1, y = m_pp - i;
      if (y < m_pp) {
        y += std::min<std::int64_t>(1, x);
        x = std::max<std::int64_t>(0, x - 1);
      }
      n.front() = m_pp + x - (i == 0 ? 1 : 0);
      n.back() = y;
      return n;
    }
    default: return {m_pp - i};  // 1F1B and ZB-H1
  }
}

// Item 10 as written: the non-expert count is scaled by β_state/SF_os,ne after the expert terms,
// which already carry β_state, are added.
double grad_clip_buffer(const Counts& c, const Factors& f, const Run& run) {
  if (!run.options.grad_clip) return 0;
  const double bs = run.precision.beta_state;
  return (bs / f.os_ne) * (c.non_expert + c.routed_per_ep * bs / f.os_e + c.shared * bs / f.os_sh);
}

double dp_comm_elements(const Counts& c, const Factors& f, const Strategy& s, bool model_has_experts) {
  const double tp = static_cast<double>(s.tp), cp = static_cast<double>(s.cp), ep = static_cast<double>(s.ep);
  double ne = 0, e = 0;
  if (s.dp > 1 && s.zero >= 1) ne = s.zero == 1 ? c.non_expert / (cp * tp) + c.non_expert / tp : c.non_expert / tp;
  if (f.dp_exp > 1 && s.zero >= 1 && model_has_experts) {
    // P_x = P'_rt + P_sh; the seed's count of routed parameters is per EP rank, so P'_rt = ep·(P'_rt/ep).
    const double px = c.routed_per_ep * ep + c.shared;
    e = s.zero == 1 ? px / (cp * f.tp_exp * ep) + px / std::max(ep, f.tp_exp) : px / (cp * f.tp_exp * ep);
  }
  return ne + e;
}

double cp_buffer(const Model& m, const Run& run, const Strategy& s, std::int64_t D) {
  if (s.cp <= 1) return 0;
  const double intra = static_cast<double>(std::min(s.cp, D));
  const double extra = s.cp <= D ? intra - 1 : 2 * intra - 1;
  return extra * cp_chunk_bytes(m, run, s);
}

double gathered_kv(const Model& m, const Run& run, const Strategy& s) {
  if (s.cp <= 1 || s.cp_algo == CpAlgo::ulysses) return 0;
  const double n_kv = static_cast<double>(m.attention == AttentionKind::mla ? m.heads : m.kv_heads);
  const double d_h = static_cast<double>(m.attention == AttentionKind::mla ? m.v_head_dim : m.head_dim);
  return static_cast<double>(s.cp - 1) * 2 * n_kv * d_h * run.options.beta_a / static_cast<double>(s.tp);
}

Device overheads(Device d) {
  d.fragmentation = 0;
  d.overhead_context = d.overhead_per_communicator = d.overhead_workspaces = d.overhead_ep_library = 0;
  d.overhead_fixed = 1024.0 * 1024.0 * 1024.0;
  return d;
}

double output_node_kept(const Model& m, const Run& run, const Strategy& s) {
  const double tokens = static_cast<double>(run.seq * s.micro_batch);
  return tokens *
         (run.options.beta_n * static_cast<double>(m.hidden) + run.options.beta_a * static_cast<double>(m.vocab));
}

double mtp_inputs_kept(const Model& m, const Run& run, const Strategy& s) {
  const double tokens = static_cast<double>(run.seq * s.micro_batch), h = static_cast<double>(m.hidden);
  // EvalHead.activ_embed: β_a·s·b·h/(tp·cp).
  const double embedding = run.options.beta_a * tokens * h / static_cast<double>(s.tp * s.cp);
  return tokens * 3 * h * run.options.beta_a + embedding;
}

double full_layer_input(const Model& m, const Run& run, const Strategy& s) {
  return run.options.beta_a * static_cast<double>(run.seq * s.micro_batch) * static_cast<double>(m.hidden) /
         static_cast<double>(s.sigma());
}

}  // namespace meshfit::sapp_nd
