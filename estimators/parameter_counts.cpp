#include "estimators/parameter_counts.hpp"

namespace meshfit {

namespace {

// §4.2: Q, K, V and O projections of MHA/GQA/MQA with n_kv,r key/value heads.
void add_gqa_attention(const Model& m, std::int64_t kv, LayerParams& p) {
  const std::int64_t h = m.hidden, a = m.heads, d = m.head_dim;
  p.attention_split = h * a * d + 2 * h * kv * d + a * d * h;
  if (m.qkv_bias) p.attention_split += a * d + 2 * kv * d;
  if (m.attention_sinks) p.attention_split += a;  // one per head, split with the heads
  const std::int64_t qk_norm = m.qk_norm_full ? (a + m.kv_heads) * d : 2 * d;
  p.attention_repl = (m.o_bias ? h : 0) + (m.qk_norm ? qk_norm : 0);
}

// §4.3: multi-head latent attention. Down-projections (and the shared rotary key) are small and
// built unsplit by Megatron-Core, so they are replicated over TP.
void add_mla_attention(const Model& m, LayerParams& p) {
  const std::int64_t h = m.hidden, a = m.heads;
  const std::int64_t qk = m.qk_nope_dim + m.qk_rope_dim;
  if (m.q_lora_rank > 0) {
    p.attention_repl += h * m.q_lora_rank + m.q_lora_rank;
    p.attention_split += m.q_lora_rank * a * qk;
  } else {
    p.attention_split += h * a * qk;
  }
  p.attention_repl += h * (m.kv_lora_rank + m.qk_rope_dim) + m.kv_lora_rank;
  p.attention_split += m.kv_lora_rank * a * (m.qk_nope_dim + m.v_head_dim);
  p.attention_split += a * m.v_head_dim * h;
}

}  // namespace

LayerParams layer_params(const Model& m, FfnKind ffn, std::int64_t kv_heads_counted) {
  LayerParams p;
  if (m.attention == AttentionKind::mla) {
    add_mla_attention(m, p);
  } else {
    add_gqa_attention(m, kv_heads_counted, p);
  }
  p.norms = m.norms_per_layer * m.norm_params();  // §4.4

  const std::int64_t n_mat = m.gated ? 3 : 2;
  const std::int64_t n_up = m.gated ? 2 : 1;
  const std::int64_t h = m.hidden;
  if (ffn == FfnKind::dense) {  // §4.5
    p.dense_split = n_mat * h * m.ffn + (m.mlp_bias ? n_up * m.ffn : 0);
    p.dense_repl = m.mlp_bias ? h : 0;
  } else {  // §4.6
    const std::int64_t E = m.experts;
    p.router = E * h + (m.router_bias ? E : 0);
    p.routed = E * n_mat * h * m.expert_ffn + (m.mlp_bias ? E * (n_up * m.expert_ffn + h) : 0);
    p.shared_split = m.shared_experts * n_mat * h * m.shared_expert_ffn;
    p.shared_repl = m.shared_gate ? h : 0;
  }
  return p;
}

std::int64_t mtp_extra_split(const Model& m) { return 2 * m.hidden * m.hidden; }
std::int64_t mtp_extra_repl(const Model& m) { return 3 * m.norm_params(); }

ModelParams model_params(const Model& m) {
  ModelParams t;
  const std::int64_t h = m.hidden;
  t.embedding = m.vocab * h;
  t.positions = m.positions * h;
  t.output = m.tie ? 0 : m.vocab * h;
  t.final_norm = m.norm_params();
  // Activated per token: the tables, the final norm, and of each layer everything but the
  // routed experts the token is not sent to.
  t.activated = t.embedding + t.positions + t.output + t.final_norm;
  for (FfnKind ffn : m.layer_ffn) {
    const LayerParams p = layer_params(m, ffn, m.kv_heads);
    t.attention += p.attention();
    t.dense_ffn += p.dense_split + p.dense_repl;
    t.routed_experts += p.routed;
    t.shared_experts += p.shared_split + p.shared_repl;
    t.router += p.router;
    t.layer_norms += p.norms;
    const std::int64_t routed_active = m.experts > 0 ? p.routed / m.experts * m.top_k : 0;
    t.activated += p.total() - p.routed + routed_active;
  }
  if (m.mtp_depths > 0 && !m.layer_ffn.empty()) {
    const LayerParams last = layer_params(m, m.layer_ffn.back(), m.kv_heads);
    t.mtp = m.mtp_depths * (last.total() + mtp_extra_split(m) + mtp_extra_repl(m));
    t.mtp_table_copies = m.mtp_depths * (m.vocab * h + (m.tie ? 0 : m.vocab * h));
  }
  return t;
}

}  // namespace meshfit
