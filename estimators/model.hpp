// The resolved model: the dimensions of docs/spec/symbols.md §4, already validated by engine/.
// Plain data: the estimators read it, nothing here parses or checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "estimators/measured_census.hpp"

namespace meshfit {

enum class AttentionKind : std::uint8_t { gqa, mla };  // gqa covers MHA, GQA and MQA
enum class FfnKind : std::uint8_t { dense, moe };
enum class NormKind : std::uint8_t { rms, layernorm };

struct Model {
  std::string name;        // preset name or file stem, for reports
  std::string model_type;  // as the config states it ("llama", "deepseek_v3", ...)

  // Dense dimensions (symbols.md §4).
  std::int64_t hidden = 0;     // h
  std::int64_t layers = 0;     // L, body (decoder) layers
  std::int64_t heads = 0;      // a
  std::int64_t kv_heads = 0;   // n_kv
  std::int64_t head_dim = 0;   // d_h (q/k/v head width of non-MLA attention)
  std::int64_t vocab = 0;      // V as the config states it
  std::int64_t ffn = 0;        // f, dense FFN width (0 when no layer is dense)
  std::int64_t positions = 0;  // P_pos, learned position embeddings (0 for RoPE)
  bool gated = true;           // SwiGLU-style gate + up (n_mat = 3, n_up = 2)
  NormKind norm = NormKind::rms;
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;
  // OLMo 2 / OLMoE normalise the whole query and key projections (a·d_h and n_kv·d_h weights),
  // Qwen3 and Gemma 3 each head (d_h weights each) (transformers' modeling_olmo2.py, modeling_qwen3.py).
  bool qk_norm_full = false;
  bool tie = false;  // output head shares the embedding table
  // Norms per body layer: 2 (pre-norm), 4 (Gemma 2/3: pre and post norms around attention and
  // MLP), 1 (Cohere 2: attention and MLP in parallel on one normed input).
  std::int64_t norms_per_layer = 2;
  bool norm_bias = true;  // a LayerNorm's bias (Cohere's LayerNorm has none)
  // gpt-oss: one learned sink logit per query head and layer (modeling_gpt_oss.py, `sinks`).
  bool attention_sinks = false;
  // gpt-oss: its experts clamp the gate and up projections before the activation (swiglu_limit).
  bool clamped_swiglu = false;
  // YaRN's attention factor, which scales the rotary cos and sin (the config's rope_scaling of
  // rope_type yarn: transformers' _compute_yarn_parameters; Megatron-Core's
  // _yarn_get_concentration_factor); 1 for every other RoPE. gpt-oss: 0.1·ln 32 + 1 = 1.3466.
  double rope_attention_factor = 1;
  // Per body layer, the keys a query attends at most: a sliding window (Mistral, Gemma 2/3,
  // Cohere 2, gpt-oss); 0 = every key before it. Empty: all 0.
  std::vector<std::int64_t> layer_window;
  // Per body layer, the chunk a query's keys are confined to (Llama 4's chunked attention: the
  // sequence cut into chunks of c tokens, causal inside each); 0 = none. Empty: all 0.
  std::vector<std::int64_t> layer_chunk;

  // Mixture of experts (E = 0 for a dense model).
  std::int64_t experts = 0;            // E, routed experts per MoE layer
  std::int64_t top_k = 0;              // k
  std::int64_t expert_ffn = 0;         // f_e
  std::int64_t shared_experts = 0;     // n_s
  std::int64_t shared_expert_ffn = 0;  // f_se
  bool router_bias = false;
  bool shared_gate = false;
  std::int64_t first_dense = 0;  // L_0, leading dense layers (reported)
  // Group-limited routing (DeepSeek-V2/V3's n_group and topk_group): the E experts in G equal
  // contiguous groups, a token's k experts drawn from T of them; G = T = 1 without a limit.
  std::int64_t expert_groups = 1;     // G
  std::int64_t groups_per_token = 1;  // T

  // Multi-head latent attention (DeepSeek-V2/V3); attention == mla when set.
  AttentionKind attention = AttentionKind::gqa;
  std::int64_t q_lora_rank = 0;   // r_q (0: no query latent)
  std::int64_t kv_lora_rank = 0;  // r_kv
  std::int64_t qk_nope_dim = 0;   // d_nope
  std::int64_t qk_rope_dim = 0;   // d_rope
  std::int64_t v_head_dim = 0;    // d_v

  std::int64_t mtp_depths = 0;  // n_mtp

  // Dropout the config turns on (gpt2's *_pdrop > 0); they become run-option defaults.
  bool attention_dropout = false;
  bool hidden_dropout = false;
  bool embedding_dropout = false;

  // FFN flavour of each body layer, in model order (size L).
  std::vector<FfnKind> layer_ffn;

  // Measured censuses by kind (§7.1); a kind listed here replaces its analytic census.
  std::vector<MeasuredCensus> measured_census;
  const MeasuredCensus* census_for(const std::string& kind) const;
  std::vector<std::string> input_warnings;  // non-fatal findings of the reader, for stderr

  int norm_width_factor() const { return norm == NormKind::layernorm && norm_bias ? 2 : 1; }  // w_n = h or 2h
  std::int64_t norm_params() const { return norm_width_factor() * hidden; }
  bool is_moe() const { return experts > 0; }
  // MoE layers among layer_ffn; kept by whoever fills layer_ffn (the reader) so that the rule
  // checks of the search do not count them per candidate.
  std::int64_t moe_layers = 0;
  std::int64_t moe_layer_count() const { return moe_layers; }
  std::int64_t qk_head_dim() const;  // d_qk
  std::int64_t v_dim() const;        // d_v
};

// The body layers' mean of f(window, chunk), each 0 where the layer has none (layer_window,
// layer_chunk); the callers return their no-window value before calling it on a model with neither.
template <class F>
double mean_over_attention_layers(const Model& m, F f) {
  const std::size_t L = std::max(m.layer_window.size(), m.layer_chunk.size());
  if (L == 0) return 0;
  double sum = 0;
  for (std::size_t l = 0; l < L; ++l) {
    const double window = l < m.layer_window.size() ? static_cast<double>(m.layer_window[l]) : 0;
    const double chunk = l < m.layer_chunk.size() ? static_cast<double>(m.layer_chunk[l]) : 0;
    sum += f(window, chunk);
  }
  return sum / static_cast<double>(L);
}

}  // namespace meshfit
