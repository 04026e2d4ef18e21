#include "estimators/sapp_nd_attention.hpp"

#include <algorithm>

namespace meshfit::sapp_nd {

// SAPP-ND memory_estimation/evaluators/layer_block.py, EvalAttn.attn_qkv_activations,
// attn_score_activations and attn_proj_activations, with the constants of arch_hooks.py's
// custom_default_transformer: 4 attention matmuls, 2 batch matmuls, one softmax, no dropout.
// The matmuls keep a parameter cast each when the optimizer is not sharded (n_attParamCast).
// Each formula's bytes over s·b tokens are divided by tp·cp (qkv, scores) or max(sp, cp)
// (projection); per token of the rank's s·b/cp share that is /tp, and cp/max(σ, cp) for the
// projection.
void add_attention(const Model& m, const Run& run, const Strategy& s, Census& c) {
  const RunOptions& o = run.options;
  const double n_mm = 4, n_bmm = 2, n_softmax = 1;
  const double n_op = n_mm + (s.zero >= 1 ? 0 : n_mm);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double n_kv = static_cast<double>(m.kv_heads);
  const double seq = static_cast<double>(run.seq);
  double qkv = 0, dh = 0;
  if (m.attention == AttentionKind::mla) {
    // CostModelParserMindformers reads dc_q, dc_kv, dhr; custom_deepseek3 sets dh = 128, the
    // value head width (v_head_dim) of DeepSeek-V3.
    dh = static_cast<double>(m.v_head_dim);
    const double dc_q = static_cast<double>(m.q_lora_rank), dc_kv = static_cast<double>(m.kv_lora_rank);
    const double dhr = static_cast<double>(m.qk_rope_dim);
    const double q = 0.25 * n_op * (dc_q + 2 * a * (dh + dhr));
    const double k = 0.25 * n_op * (dhr + n_kv * (2 * dh + dhr));
    const double v = 0.25 * n_op * (n_kv * dh + dc_kv);
    qkv = o.beta_a * (q + k + v);
  } else {
    dh = h / a;  // the parser's per-head width
    qkv = o.beta_a * (0.25 * n_op * h + 0.5 * n_op * dh * n_kv);
  }
  const double cp = static_cast<double>(s.cp);
  const double sigma = static_cast<double>(s.sigma());
  c.add(Op::attMM, true, qkv);
  c.add(Op::attBMM, true, o.beta_a * n_bmm * dh);
  // The scores: s_fa·b·a·s bytes per softmax, s_fa = s/a under flash attention (SAPP-ND's own
  // "[HYPOTHESIS]"), so s per token of the whole sequence whatever cp divides.
  const double s_fa_a = run.flash_attention ? seq : seq * a;
  c.add(Op::softmax, true, n_softmax * s_fa_a * o.beta_sm);
  c.add(Op::headCast, true, n_softmax * s_fa_a * o.beta_a);
  c.add(Op::attMM, false, o.beta_a * h * 0.25 * n_op * cp * sigma / std::max(sigma, cp));
}

}  // namespace meshfit::sapp_nd
