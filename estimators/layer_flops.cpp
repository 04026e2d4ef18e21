#include "estimators/layer_flops.hpp"

#include <algorithm>
#include <cmath>

namespace meshfit {

double LayerFlops::total() const {
  double t = 0;
  for (std::size_t i = 0; i < count; ++i) t += ops[i].flops;
  return t;
}

double flops_core(const LayerFlops& f) {
  for (std::size_t i = 0; i < f.count; ++i) {
    if (f.ops[i].role == OpRole::core) return f.ops[i].flops;
  }
  return 0;
}

double window_share(const Model& m, double s) {
  if (m.layer_window.empty() && m.layer_chunk.empty()) return 1;
  return mean_over_attention_layers(m, [s](double w, double c) {
    if (c > 0 && c < s) {
      // Query i attends (i mod c) + 1 keys: q = ⌊s/c⌋ whole chunks of c(c + 1)/2 and a last one of
      // r = s − qc tokens, r(r + 1)/2.
      const double q = std::floor(s / c), r = s - q * c;
      return (q * c * (c + 1) / 2 + r * (r + 1) / 2) / (kCausalFactor * s * s);
    }
    return w > 0 && w < s ? (w * s - w * (w - 1) / 2) / (kCausalFactor * s * s) : 1.0;
  });
}

LayerFlops layer_flops(const Model& m, FfnKind ffn, double n_tok, double s, double b, double load) {
  LayerFlops f;
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double d_qk = static_cast<double>(m.qk_head_dim()), d_v = static_cast<double>(m.v_dim());
  const double core = kCausalFactor * 2 * b * s * s * a * (d_qk + d_v) * window_share(m, s);
  if (m.attention == AttentionKind::mla) {
    const double rq = static_cast<double>(m.q_lora_rank), rkv = static_cast<double>(m.kv_lora_rank);
    const double d_nope = static_cast<double>(m.qk_nope_dim), d_rope = static_cast<double>(m.qk_rope_dim);
    if (m.q_lora_rank > 0) {
      f.add(2 * n_tok * h * rq, OpRole::attention_proj);       // query down
      f.add(2 * n_tok * rq * a * d_qk, OpRole::attention_up);  // query up
    } else {
      f.add(2 * n_tok * h * a * d_qk, OpRole::attention_proj);
    }
    f.add(2 * n_tok * h * (rkv + d_rope), OpRole::attention_proj);      // kv down
    f.add(2 * n_tok * rkv * a * (d_nope + d_v), OpRole::attention_up);  // kv up
  } else {
    const double kv = static_cast<double>(m.kv_heads);
    f.add(2 * n_tok * h * (a * d_qk + kv * d_qk + kv * d_v), OpRole::attention_proj);
  }
  f.add(core, OpRole::core);
  f.add(2 * n_tok * a * d_v * h, OpRole::attention_proj);  // o
  const double n_up = m.gated ? 2 : 1;
  if (ffn == FfnKind::dense) {
    const double ff = static_cast<double>(m.ffn);
    f.add(2 * n_tok * h * ff * n_up, OpRole::ffn_proj);
    f.add(2 * n_tok * ff * h, OpRole::ffn_proj);
  } else {
    const double k = static_cast<double>(m.top_k), fe = static_cast<double>(m.expert_ffn);
    const double fsh = static_cast<double>(m.shared_experts * m.shared_expert_ffn);
    f.add(2 * n_tok * h * static_cast<double>(m.experts), OpRole::router);
    f.add(2 * n_tok * k * h * fe * n_up * load, OpRole::ffn_proj);
    f.add(2 * n_tok * k * fe * h * load, OpRole::ffn_proj);
    f.add(2 * n_tok * h * fsh * n_up, OpRole::shared_expert);
    f.add(2 * n_tok * fsh * h, OpRole::shared_expert);
  }
  return f;
}

double logits_flops(const Model& m, double n_tok, double vocab) {
  return 2 * n_tok * static_cast<double>(m.hidden) * vocab;
}

double mtp_projection_flops(const Model& m, double n_tok) {
  const double h = static_cast<double>(m.hidden);
  return 2 * n_tok * 2 * h * h;
}

double sequence_flops(const Model& m, double s) {
  // A layer's FLOPs depend only on its FFN kind: one evaluation per kind, times its count.
  const auto moe_layers = static_cast<double>(m.moe_layer_count());
  const auto dense_layers = static_cast<double>(m.layer_ffn.size()) - moe_layers;
  double total = 0;
  if (dense_layers > 0) total += dense_layers * layer_flops(m, FfnKind::dense, s, s, 1, 1).total();
  if (moe_layers > 0) total += moe_layers * layer_flops(m, FfnKind::moe, s, s, 1, 1).total();
  const double vocab = static_cast<double>(m.vocab);
  total += logits_flops(m, s, vocab);
  if (m.mtp_depths > 0 && !m.layer_ffn.empty()) {
    const double depth =
        layer_flops(m, m.layer_ffn.back(), s, s, 1, 1).total() + mtp_projection_flops(m, s) + logits_flops(m, s, vocab);
    total += static_cast<double>(m.mtp_depths) * depth;
  }
  return total;
}

}  // namespace meshfit
