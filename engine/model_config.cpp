#include "engine/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "engine/census_config.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/presets.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

// A value with the field it came from, so that a later check can name that field.
template <class T>
struct Sourced {
  std::optional<T> value;
  std::string field;
  void set(std::optional<T> v, const std::string& f) {
    if (v) {
      value = v;
      field = f;
    }
  }
};

// Everything the family mapping of §2.1.2 reads, before validation and layer derivation.
struct Draft {
  Sourced<std::int64_t> h, L, a, n_kv, d_h, V, f, P_pos;
  Sourced<bool> gated, qkv_bias, o_bias, mlp_bias, qk_norm, tie, router_bias, shared_gate;
  Sourced<bool> qk_norm_full, sinks, norm_bias, clamped_swiglu;
  Sourced<double> rope_attention_factor;
  Sourced<std::int64_t> norms_per_layer, window;
  // Which layers attend within `window`: layer_types as the config lists them, else every layer
  // but each full_every-th (transformers' default pattern of the family; 0: none windowed).
  std::vector<std::string> layer_types;
  std::string layer_types_field;
  std::int64_t full_every = 0;
  Sourced<std::string> norm, attention;
  Sourced<std::int64_t> E, k, f_e, n_s, f_se, L_0, q_moe, sparse_step, n_mtp, n_group, topk_group;
  Sourced<std::int64_t> r_q, r_kv, d_nope, d_rope, d_v;
  std::vector<std::int64_t> mlp_only_layers;
  std::string mlp_only_field;
  bool moe_every_layer = false;    // mixtral: every layer is MoE
  bool moe_deepseek_rule = false;  // ℓ ≥ L_0 and ℓ mod q_moe = 0
  bool attention_dropout = false, hidden_dropout = false, embedding_dropout = false;
  // Llama 4: the chunk its RoPE layers attend within, and which layers use RoPE (1) or not (0).
  Sourced<std::int64_t> chunk;
  std::vector<std::int64_t> rope_layers;
  std::int64_t no_rope_every = 0;  // without rope_layers: every no_rope_every-th layer is NoPE
};

const std::vector<std::string> kTypes = {
    "llama",  "mistral",     "mixtral",  "qwen2", "qwen3",   "qwen3_moe",  "qwen2_moe",  "deepseek_v3", "deepseek_v2",
    "gpt2",   "gpt",         "nemotron", "phi3",  "granite", "granitemoe", "starcoder2", "gpt_neox",    "gpt_oss",
    "gemma2", "gemma3_text", "olmo2",    "olmoe", "cohere2", "glm4_moe",   "llama4",     "llama4_text"};

// Fields every llama-like family shares (§2.1.2, row `llama`).
void read_llama_like(const Fields& c, Draft& d) {
  d.h.set(c.optional_int("hidden_size"), "hidden_size");
  d.L.set(c.optional_int("num_hidden_layers"), "num_hidden_layers");
  d.a.set(c.optional_int("num_attention_heads"), "num_attention_heads");
  d.n_kv.set(c.optional_int("num_key_value_heads"), "num_key_value_heads");
  d.d_h.set(c.optional_int("head_dim"), "head_dim");
  d.V.set(c.optional_int("vocab_size"), "vocab_size");
  d.f.set(c.optional_int("intermediate_size"), "intermediate_size");
  d.tie.set(c.optional_bool("tie_word_embeddings"), "tie_word_embeddings");
  d.gated.set(true, "model_type");
  d.norm.set(std::string("rms"), "model_type");
}

void read_attention_bias(const Fields& c, Draft& d) {
  const auto bias = c.optional_bool("attention_bias");
  d.qkv_bias.set(bias, "attention_bias");
  d.o_bias.set(bias, "attention_bias");
}

// The GPT block, GPT-2's and Megatron GPT's alike: an ungated GeLU MLP, LayerNorm, a bias on every
// projection.
void gpt_block(Draft& d) {
  d.gated.set(false, "model_type");
  d.norm.set(std::string("ln"), "model_type");
  d.qkv_bias.set(true, "model_type");
  d.o_bias.set(true, "model_type");
  d.mlp_bias.set(true, "model_type");
}

// The llama-like families: Llama, Mistral, Mixtral, Qwen 2/3 and their MoE variants.
void read_llama_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen3" ||
      type == "qwen3_moe" || type == "qwen2_moe") {
    read_llama_like(c, d);
  }
  if (type == "llama") {
    read_attention_bias(c, d);
    d.mlp_bias.set(c.optional_bool("mlp_bias"), "mlp_bias");
  } else if (type == "mixtral") {
    d.E.set(c.optional_int("num_local_experts"), "num_local_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.f_e.set(c.optional_int("intermediate_size"), "intermediate_size");
    d.moe_every_layer = true;
  } else if (type == "qwen2") {
    // Qwen2 has q/k/v biases and no output bias, fixed by the architecture, not the config.
    d.qkv_bias.set(true, "model_type");
    d.o_bias.set(false, "model_type");
  } else if (type == "qwen3" || type == "qwen3_moe") {
    read_attention_bias(c, d);
    d.qk_norm.set(true, "model_type");
  } else if (type == "qwen2_moe") {
    d.qkv_bias.set(true, "model_type");
    d.shared_gate.set(true, "model_type");
    d.f_se.set(c.optional_int("shared_expert_intermediate_size"), "shared_expert_intermediate_size");
    if (d.f_se.value) d.n_s.set(1, "shared_expert_intermediate_size");
  }
  if (type == "qwen3_moe" || type == "qwen2_moe") {
    d.E.set(c.optional_int("num_experts", 0), "num_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.f_e.set(c.optional_int("moe_intermediate_size"), "moe_intermediate_size");
    d.sparse_step.set(c.optional_int("decoder_sparse_step"), "decoder_sparse_step");
    d.mlp_only_layers = c.int_list("mlp_only_layers", 0);
    d.mlp_only_field = "mlp_only_layers";
  }
}

// n_group and topk_group of a config.json whose router limits each token to some expert groups
// (Model::expert_groups); `applies` false: the router ignores them.
void read_expert_groups(const Fields& c, Draft& d, bool applies) {
  const std::optional<std::int64_t> groups = c.optional_int("n_group", 1), per_token = c.optional_int("topk_group", 1);
  d.n_group.set(applies ? groups.value_or(1) : 1, "n_group");
  d.topk_group.set(applies ? per_token.value_or(groups.value_or(1)) : 1, "topk_group");
}

// DeepSeek V2/V3: MLA attention, shared and routed experts, the first dense layers, MTP depths.
void read_deepseek_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "deepseek_v3" || type == "deepseek_v2") {
    d.h.set(c.optional_int("hidden_size"), "hidden_size");
    d.L.set(c.optional_int("num_hidden_layers"), "num_hidden_layers");
    d.a.set(c.optional_int("num_attention_heads"), "num_attention_heads");
    d.V.set(c.optional_int("vocab_size"), "vocab_size");
    d.f.set(c.optional_int("intermediate_size"), "intermediate_size");
    d.f_e.set(c.optional_int("moe_intermediate_size"), "moe_intermediate_size");
    d.E.set(c.optional_int("n_routed_experts", 0), "n_routed_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.n_s.set(c.optional_int("n_shared_experts", 0), "n_shared_experts");
    d.L_0.set(c.optional_int("first_k_dense_replace", 0), "first_k_dense_replace");
    d.q_moe.set(c.optional_int("moe_layer_freq"), "moe_layer_freq");
    d.r_q.set(c.optional_int("q_lora_rank", 0), "q_lora_rank");
    d.r_kv.set(c.optional_int("kv_lora_rank"), "kv_lora_rank");
    d.d_nope.set(c.optional_int("qk_nope_head_dim"), "qk_nope_head_dim");
    d.d_rope.set(c.optional_int("qk_rope_head_dim", 0), "qk_rope_head_dim");
    d.d_v.set(c.optional_int("v_head_dim"), "v_head_dim");
    d.n_mtp.set(c.optional_int("num_nextn_predict_layers", 0), "num_nextn_predict_layers");
    d.tie.set(c.optional_bool("tie_word_embeddings"), "tie_word_embeddings");
    // DeepSeek-V3's noaux_tc routing adds e_score_correction_bias, one value per expert.
    const std::optional<std::string> topk_method = c.optional_string("topk_method");
    d.router_bias.set(topk_method == std::optional<std::string>("noaux_tc"), "topk_method");
    // Group-limited routing: n_group groups, topk_group of them per token (DeepSeek-V3: 8 and 4),
    // unless the router is DeepSeek-V2's plain "greedy" top-k, which ignores them (transformers'
    // modeling_deepseek_v2.py). Unstated: no limit, as Megatron-Bridge's DeepSeek bridge reads a
    // missing n_group (models/deepseek/deepseek_v3_bridge.py: `hf_cfg.get("n_group") or 1`).
    read_expert_groups(c, d, topk_method != std::optional<std::string>("greedy"));
    d.attention.set(std::string("mla"), "model_type");
    d.gated.set(true, "model_type");
    d.norm.set(std::string("rms"), "model_type");
    d.moe_deepseek_rule = true;
  }
}

// The GPT block's families: Megatron GPT, Nemotron, GPT-2, StarCoder2, GPT-NeoX.
void read_gpt_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "gpt") {
    // Megatron-Core's (and NeMo's) GPT — GPT-3 and its kin — written with Hugging Face's llama
    // field names, as the measured runs' cases write it: LayerNorm, biases on every projection
    // (Megatron's add_bias_linear, add_qkv_bias), a GeLU MLP, learned absolute positions
    // (position_embedding_type learned_absolute, max_position_embeddings of them), tied tables
    // unless untie_embeddings_and_output_weights.
    read_llama_like(c, d);
    gpt_block(d);
    d.P_pos.set(c.optional_int("max_position_embeddings", 0), "max_position_embeddings");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(true), "tie_word_embeddings");
    // Megatron's --hidden-dropout and --attention-dropout (0.1 by default in Megatron-LM's
    // arguments.py, 0 unless stated here): a hidden dropout keeps a 1-byte mask after attention
    // and after the MLP; an attention dropout one per score, where the scores are materialised.
    d.hidden_dropout = c.optional_number("hidden_dropout", 0, 1).value_or(0) > 0;
    d.attention_dropout = c.optional_number("attention_dropout", 0, 1).value_or(0) > 0;
  }
  if (type == "nemotron") {
    // Nemotron-4 / Minitron (transformers' NemotronConfig): llama's fields, a squared-ReLU MLP
    // without a gate, LayerNorm1P (a weight and a bias per norm), RoPE; attention_bias and
    // mlp_bias (both false by default) as given.
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.mlp_bias.set(c.optional_bool("mlp_bias"), "mlp_bias");
    d.gated.set(false, "model_type");
    d.norm.set(std::string("ln"), "model_type");
  }
  if (type == "gpt2") {
    d.h.set(c.optional_int("n_embd"), "n_embd");
    d.L.set(c.optional_int("n_layer"), "n_layer");
    d.a.set(c.optional_int("n_head"), "n_head");
    d.V.set(c.optional_int("vocab_size"), "vocab_size");
    d.f.set(c.optional_int("n_inner"), "n_inner");
    d.P_pos.set(c.optional_int("n_positions", 0), "n_positions");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(true), "tie_word_embeddings");
    gpt_block(d);
    d.attention_dropout = c.optional_number("attn_pdrop", 0, 1).value_or(0) > 0;
    d.hidden_dropout = c.optional_number("resid_pdrop", 0, 1).value_or(0) > 0;
    d.embedding_dropout = c.optional_number("embd_pdrop", 0, 1).value_or(0) > 0;
  }
  if (type == "starcoder2") {
    // StarCoder2: GQA with RoPE, LayerNorm, a bias on every projection (use_bias), an ungated GeLU
    // MLP (c_fc, c_proj), tied tables by default (transformers' modeling_starcoder2.py).
    read_llama_like(c, d);
    gpt_block(d);
    const bool bias = c.optional_bool("use_bias").value_or(true);
    d.qkv_bias.set(bias, "use_bias");
    d.o_bias.set(bias, "use_bias");
    d.mlp_bias.set(bias, "use_bias");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(true), "tie_word_embeddings");
  }
  if (type == "gpt_neox") {
    // GPT-NeoX / Pythia: fused q/k/v with biases, LayerNorm, an ungated GeLU MLP with biases, rotary
    // on part of each head (no weights), untied tables; the parallel residual changes no weight
    // (transformers' modeling_gpt_neox.py).
    read_llama_like(c, d);
    gpt_block(d);
    const bool bias = c.optional_bool("attention_bias").value_or(true);
    d.qkv_bias.set(bias, "attention_bias");
    d.o_bias.set(bias, "attention_bias");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(false), "tie_word_embeddings");
  }
}

// Llama's block under other names: Phi-3, Granite and GraniteMoe.
void read_llama_block_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "phi3") {
    // transformers' Phi3: llama's block with q/k/v and gate/up each fused into one matrix (the same
    // weights), RMSNorm, no biases, untied unless the config ties.
    read_llama_like(c, d);
  }
  if (type == "granite" || type == "granitemoe") {
    // IBM Granite 3: llama's block; its embedding/residual/logit multipliers scale values, not
    // weights. GraniteMoe: every layer's MLP is num_local_experts experts of intermediate_size,
    // num_experts_per_tok routed, a bias-free router (transformers' modeling_granitemoe.py).
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.mlp_bias.set(c.optional_bool("mlp_bias"), "mlp_bias");
    if (type == "granitemoe") {
      d.E.set(c.optional_int("num_local_experts"), "num_local_experts");
      d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
      d.f_e.set(c.optional_int("intermediate_size"), "intermediate_size");
      d.moe_every_layer = true;
    }
  }
}

// The sliding window and which layers use it: the config's layer_types ("sliding_attention" /
// "full_attention"), else the family's pattern, every `full_every`-th layer full.
void read_windows(const Fields& c, Draft& d, std::int64_t full_every) {
  d.window.set(c.optional_int("sliding_window"), "sliding_window");
  d.layer_types = c.string_list("layer_types");
  d.layer_types_field = "layer_types";
  d.full_every = full_every;
}

// Newer llama-like blocks: OLMo 2 and OLMoE (whole-projection q/k norms), Gemma 2 and 3 (four
// norms a layer, GeGLU, alternating sliding windows), Cohere 2 (a parallel block on one
// bias-free LayerNorm), gpt-oss (biased MoE, attention sinks, alternating sliding windows).
void read_newer_llama_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "olmo2" || type == "olmoe") {
    // transformers' modeling_olmo2.py / modeling_olmoe.py: q_norm over a·d_h, k_norm over n_kv·d_h;
    // OLMo 2 normalises each sublayer's output (post-norm, still two norms a layer).
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.qk_norm.set(true, "model_type");
    d.qk_norm_full.set(true, "model_type");
    if (type == "olmoe") {
      d.E.set(c.optional_int("num_experts"), "num_experts");
      d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
      d.f_e.set(c.optional_int("intermediate_size"), "intermediate_size");
      d.moe_every_layer = true;
    }
  }
  if (type == "gemma2" || type == "gemma3_text") {
    // modeling_gemma2.py / modeling_gemma3.py: input, post-attention, pre- and post-feedforward
    // RMSNorms; tied tables by default; Gemma 3 adds per-head q/k norms and one full layer in six.
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.norms_per_layer.set(4, "model_type");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(true), "tie_word_embeddings");
    if (type == "gemma3_text") d.qk_norm.set(true, "model_type");
    read_windows(c, d, type == "gemma2" ? 2 : c.optional_int("sliding_window_pattern").value_or(6));
  }
  if (type == "cohere2") {
    // modeling_cohere2.py: one LayerNorm (weight, no bias) feeds attention and MLP in parallel;
    // tied tables; three sliding-window layers to one full by default.
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.norm.set(std::string("ln"), "model_type");
    d.norm_bias.set(false, "model_type");
    d.norms_per_layer.set(1, "model_type");
    d.tie.set(c.optional_bool("tie_word_embeddings").value_or(true), "tie_word_embeddings");
    read_windows(c, d, c.optional_int("sliding_window_pattern").value_or(4));
  }
  if (type == "gpt_oss") {
    // modeling_gpt_oss.py: every layer MoE, num_local_experts experts of intermediate_size with
    // biases on gate_up and down, a router with a bias, per-head attention sinks, q/k/v/o biases
    // (attention_bias), sliding and full attention alternating.
    read_llama_like(c, d);
    d.qkv_bias.set(c.optional_bool("attention_bias").value_or(true), "attention_bias");
    d.o_bias.set(c.optional_bool("attention_bias").value_or(true), "attention_bias");
    d.E.set(c.optional_int("num_local_experts"), "num_local_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.f_e.set(c.optional_int("intermediate_size"), "intermediate_size");
    d.mlp_bias.set(true, "model_type");
    d.router_bias.set(true, "model_type");
    d.sinks.set(true, "model_type");
    // Its experts clamp the gate and up projections (swiglu_limit, 7.0) before their activation.
    d.clamped_swiglu.set(c.optional_number("swiglu_limit", 0, 1e6).value_or(7.0) > 0, "swiglu_limit");
    d.moe_every_layer = true;
    read_windows(c, d, 2);
  }
}

// GLM-4.5 / 4.6 (glm4_moe) and Llama 4 (llama4, its text model llama4_text): MoE models on
// grouped-query attention.
void read_moe_gqa_family(const std::string& type, const Fields& c, Draft& d) {
  if (type == "glm4_moe") {
    // transformers' modeling_glm4_moe.py: q/k/v biases (attention_bias), no output bias; per-head
    // q/k RMSNorms when use_qk_norm; the first first_k_dense_replace layers dense
    // (intermediate_size), every later one MoE: n_routed_experts of moe_intermediate_size, top
    // num_experts_per_tok by sigmoid score with e_score_correction_bias (one per expert),
    // n_shared_experts of the same width; untied tables; num_nextn_predict_layers MTP depths
    // (DeepSeek-V3's block: the checkpoint holds them, Megatron-Bridge trains them).
    read_llama_like(c, d);
    const bool bias = c.optional_bool("attention_bias").value_or(false);
    d.qkv_bias.set(bias, "attention_bias");
    d.o_bias.set(false, "model_type");
    d.qk_norm.set(c.optional_bool("use_qk_norm").value_or(false), "use_qk_norm");
    d.E.set(c.optional_int("n_routed_experts", 0), "n_routed_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.f_e.set(c.optional_int("moe_intermediate_size"), "moe_intermediate_size");
    d.n_s.set(c.optional_int("n_shared_experts", 0), "n_shared_experts");
    d.L_0.set(c.optional_int("first_k_dense_replace", 0), "first_k_dense_replace");
    d.n_mtp.set(c.optional_int("num_nextn_predict_layers", 0), "num_nextn_predict_layers");
    d.router_bias.set(true, "model_type");
    read_expert_groups(c, d, true);  // GLM-4.5's config: 1 and 1, no limit
    d.moe_deepseek_rule = true;
  }
  if (type == "llama4" || type == "llama4_text") {
    // transformers' modeling_llama4.py (text model): no biases unless attention_bias; its q/k
    // norm is a weightless L2 norm; MoE layers every interleave_moe_layer_step-th (from layer
    // step − 1) or as moe_layers lists them, each num_local_experts experts of intermediate_size,
    // top num_experts_per_tok, a bias-free router and one shared expert of intermediate_size;
    // dense layers of intermediate_size_mlp; untied tables. RoPE layers attend within chunks of
    // attention_chunk_size; no_rope_layers marks them (1 = RoPE), every fourth layer NoPE (full
    // causal) when it is empty.
    read_llama_like(c, d);
    read_attention_bias(c, d);
    d.f.set(c.optional_int("intermediate_size_mlp"), "intermediate_size_mlp");
    d.E.set(c.optional_int("num_local_experts", 0), "num_local_experts");
    d.k.set(c.optional_int("num_experts_per_tok"), "num_experts_per_tok");
    d.f_e.set(c.optional_int("intermediate_size"), "intermediate_size");
    d.n_s.set(1, "model_type");
    d.f_se.set(c.optional_int("intermediate_size"), "intermediate_size");
    d.sparse_step.set(c.optional_int("interleave_moe_layer_step"), "interleave_moe_layer_step");
    if (c.has("moe_layers")) {
      // The listed layers are MoE: every other layer is an mlp-only one.
      const std::vector<std::int64_t> moe = c.int_list("moe_layers", 0);
      for (std::int64_t l = 0; l < d.L.value.value_or(0); ++l) {
        if (std::find(moe.begin(), moe.end(), l) == moe.end()) d.mlp_only_layers.push_back(l);
      }
      d.mlp_only_field = "moe_layers";
      d.sparse_step.set(1, "moe_layers");
    }
    d.chunk.set(c.optional_int("attention_chunk_size"), "attention_chunk_size");
    d.rope_layers = c.int_list("no_rope_layers", 0);
    d.no_rope_every = 4;
  }
}

// YaRN's attention factor from the config's rope scaling (rope_scaling, or rope_parameters in
// newer transformers), as transformers' _compute_yarn_parameters derives it: attention_factor
// when given, else get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are
// given, else get_mscale(factor), with get_mscale(s, m) = 0.1·m·ln s + 1 (1 for s ≤ 1). Other rope
// types leave the rotary unscaled.
void read_rope_scaling(const Fields& c, Draft& d) {
  const char* key = c.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  const auto r = c.optional_map(key);
  if (!r) return;
  const auto type = r->has("rope_type") ? r->optional_string("rope_type") : r->optional_string("type");
  if (type != std::optional<std::string>("yarn")) return;
  const auto factor = r->optional_number("factor", 1, 1e6);
  if (!factor) r->fail("factor", "a YaRN scaling factor (a number of at least 1)");
  const auto get_mscale = [&](double m) { return *factor <= 1 ? 1.0 : 0.1 * m * std::log(*factor) + 1; };
  const auto given = r->optional_number("attention_factor", 1e-6, 1e6);
  const auto mscale = r->optional_number("mscale", 0, 1e6);
  const auto mscale_all_dim = r->optional_number("mscale_all_dim", 0, 1e6);
  double value = get_mscale(1);
  if (given) {
    value = *given;
  } else if (mscale && mscale_all_dim && *mscale != 0 && *mscale_all_dim != 0) {
    value = get_mscale(*mscale) / get_mscale(*mscale_all_dim);
  }
  d.rope_attention_factor.set(value, r->path(given ? "attention_factor" : "factor"));
}

void read_family(const std::string& type, const Fields& c, Draft& d) {
  read_llama_family(type, c, d);
  read_deepseek_family(type, c, d);
  read_gpt_family(type, c, d);
  read_llama_block_family(type, c, d);
  read_newer_llama_family(type, c, d);
  read_moe_gqa_family(type, c, d);
  read_rope_scaling(c, d);
}

// The `model:` block: symbols of memory-model.md §2.1.1 written in ASCII; they override the
// config's fields and make an unknown model_type usable.
void read_symbols(const Fields& s, Draft& d) {
  s.reject_unknown({"h",           "L",
                    "a",           "n_kv",
                    "d_h",         "V",
                    "f",           "P_pos",
                    "gated",       "norm",
                    "qkv_bias",    "o_bias",
                    "mlp_bias",    "qk_norm",
                    "tie",         "E",
                    "k",           "f_e",
                    "n_s",         "f_se",
                    "router_bias", "shared_gate",
                    "L_0",         "q_moe",
                    "sparse_step", "mlp_only_layers",
                    "attention",   "r_q",
                    "r_kv",        "d_nope",
                    "d_rope",      "d_v",
                    "n_mtp",       "n_group",
                    "topk_group"});
  auto i = [&](Sourced<std::int64_t>& t, const char* key, std::int64_t min = 1) {
    t.set(s.optional_int(key, min), s.path(key));
  };
  auto b = [&](Sourced<bool>& t, const char* key) { t.set(s.optional_bool(key), s.path(key)); };
  i(d.h, "h");
  i(d.L, "L");
  i(d.a, "a");
  i(d.n_kv, "n_kv");
  i(d.d_h, "d_h");
  i(d.V, "V");
  i(d.f, "f");
  i(d.P_pos, "P_pos", 0);
  i(d.E, "E", 0);
  i(d.k, "k");
  i(d.f_e, "f_e");
  i(d.n_s, "n_s", 0);
  i(d.f_se, "f_se");
  i(d.L_0, "L_0", 0);
  i(d.q_moe, "q_moe");
  i(d.sparse_step, "sparse_step");
  i(d.r_q, "r_q", 0);
  i(d.r_kv, "r_kv");
  i(d.d_nope, "d_nope");
  i(d.d_rope, "d_rope", 0);
  i(d.d_v, "d_v");
  i(d.n_mtp, "n_mtp", 0);
  i(d.n_group, "n_group");
  i(d.topk_group, "topk_group");
  b(d.gated, "gated");
  b(d.qkv_bias, "qkv_bias");
  b(d.o_bias, "o_bias");
  b(d.mlp_bias, "mlp_bias");
  b(d.qk_norm, "qk_norm");
  b(d.tie, "tie");
  b(d.router_bias, "router_bias");
  b(d.shared_gate, "shared_gate");
  d.norm.set(s.optional_string("norm"), s.path("norm"));
  d.attention.set(s.optional_string("attention"), s.path("attention"));
  if (s.has("mlp_only_layers")) {
    d.mlp_only_layers = s.int_list("mlp_only_layers", 0);
    d.mlp_only_field = s.path("mlp_only_layers");
  }
  if (s.has("E") && !d.moe_deepseek_rule && !d.sparse_step.value) d.moe_every_layer = true;
}

std::int64_t need(const Sourced<std::int64_t>& v, const Fields& c, const std::string& field, const std::string& why) {
  if (!v.value) c.fail(field, "missing; expected a positive integer (" + why + ")");
  return *v.value;
}

// Which body layers are MoE (§2.1.2, by family).
void derive_layers(const Draft& d, const Fields& c, Model& m) {
  m.layer_ffn.assign(static_cast<std::size_t>(m.layers), FfnKind::dense);
  if (m.experts == 0) return;
  for (std::int64_t l : d.mlp_only_layers) {
    if (l >= m.layers) {
      c.fail(d.mlp_only_field,
             "layer index " + std::to_string(l) + " is not below the " + std::to_string(m.layers) + " body layers");
    }
  }
  const std::int64_t step = d.sparse_step.value.value_or(1);
  const std::int64_t freq = d.q_moe.value.value_or(1);
  for (std::int64_t l = 0; l < m.layers; ++l) {
    bool moe = true;
    if (d.moe_deepseek_rule) {
      moe = l >= m.first_dense && l % freq == 0;
    } else if (!d.moe_every_layer) {
      const bool listed = std::find(d.mlp_only_layers.begin(), d.mlp_only_layers.end(), l) != d.mlp_only_layers.end();
      moe = !listed && (l + 1) % step == 0;
    }
    m.layer_ffn[static_cast<std::size_t>(l)] = moe ? FfnKind::moe : FfnKind::dense;
  }
}

// Each body layer's attention window (Model::layer_window): none without a sliding_window.
void derive_windows(const Draft& d, const Fields& c, Model& m) {
  if (!d.window.value) return;
  const auto L = static_cast<std::size_t>(m.layers);
  m.layer_window.assign(L, 0);
  if (!d.layer_types.empty()) {
    if (d.layer_types.size() != L) {
      c.fail(d.layer_types_field, "expected one entry per body layer (" + std::to_string(L) + "), got " +
                                      std::to_string(d.layer_types.size()));
    }
    for (std::size_t l = 0; l < L; ++l) {
      const std::string& t = d.layer_types[l];
      if (t != "sliding_attention" && t != "full_attention") {
        c.fail(d.layer_types_field, "expected 'sliding_attention' or 'full_attention', got " + quoted_text(t) +
                                        " at layer " + std::to_string(l));
      }
      if (t == "sliding_attention") m.layer_window[l] = *d.window.value;
    }
  } else if (d.full_every > 0) {
    for (std::size_t l = 0; l < L; ++l) {
      if ((l + 1) % static_cast<std::size_t>(d.full_every) != 0) m.layer_window[l] = *d.window.value;
    }
  }
}

// Each body layer's attention chunk (Model::layer_chunk): Llama 4's RoPE layers.
void derive_chunks(const Draft& d, const Fields& c, Model& m) {
  if (!d.chunk.value) return;
  const auto L = static_cast<std::size_t>(m.layers);
  if (!d.rope_layers.empty() && d.rope_layers.size() != L) {
    c.fail("no_rope_layers", "expected one entry per body layer (" + std::to_string(L) + "), got " +
                                 std::to_string(d.rope_layers.size()));
  }
  m.layer_chunk.assign(L, 0);
  for (std::size_t l = 0; l < L; ++l) {
    const bool rope = d.rope_layers.empty()
                          ? d.no_rope_every <= 0 || (l + 1) % static_cast<std::size_t>(d.no_rope_every) != 0
                          : d.rope_layers[l] != 0;
    if (rope) m.layer_chunk[l] = *d.chunk.value;
  }
}

// Upper bounds on a model's sizes, far beyond every published model (the largest have 126 body
// layers, hidden size 25,600, 384 routed experts, vocabularies of 256 k) and low enough that
// every parameter and element count the estimators form in 64-bit integers stays exact (the
// largest, a model's routed expert weights, under 2^61) and that a search's per-layout tables,
// which grow faster than the square of the layer count, stay within memory (512 layers: ~0.5 GB).
void check_bounds(const Draft& d, const Fields& c) {
  auto at_most = [&](const Sourced<std::int64_t>& v, std::int64_t max, const std::string& what) {
    if (v.value && *v.value > max) {
      c.fail(v.field, "expected at most " + std::to_string(max) + " " + what + ", got " + std::to_string(*v.value));
    }
  };
  at_most(d.L, 512, "body layers");
  at_most(d.h, 131072, "(hidden size)");
  at_most(d.a, 4096, "query heads");
  at_most(d.n_kv, 4096, "key/value heads");
  at_most(d.d_h, 4096, "(head width)");
  at_most(d.V, 8388608, "vocabulary entries");
  at_most(d.P_pos, 8388608, "learned positions");
  at_most(d.f, 1048576, "(dense FFN width)");
  at_most(d.E, 4096, "routed experts");
  at_most(d.f_e, 1048576, "(routed expert width)");
  at_most(d.n_s, 64, "shared experts");
  at_most(d.f_se, 1048576, "(shared expert width)");
  at_most(d.n_mtp, 16, "MTP depths");
  at_most(d.r_q, 131072, "(query latent rank)");
  at_most(d.r_kv, 131072, "(key/value latent rank)");
  at_most(d.d_nope, 4096, "(non-rotary head width)");
  at_most(d.d_rope, 4096, "(rotary head width)");
  at_most(d.d_v, 4096, "(value head width)");
}

Model build(const Draft& d, const Fields& c, const std::string& type, const std::string& name) {
  check_bounds(d, c);
  Model m;
  m.name = printable(name);  // it reaches the terminal, JSON and XML reports: no control bytes, valid UTF-8
  m.model_type = type;
  const bool gpt2 = type == "gpt2";
  m.hidden = need(d.h, c, d.h.field.empty() ? (gpt2 ? "n_embd" : "hidden_size") : d.h.field, "hidden size");
  m.layers = need(d.L, c, d.L.field.empty() ? (gpt2 ? "n_layer" : "num_hidden_layers") : d.L.field, "body layers");
  m.heads = need(d.a, c, d.a.field.empty() ? (gpt2 ? "n_head" : "num_attention_heads") : d.a.field, "query heads");
  m.vocab = need(d.V, c, d.V.field.empty() ? "vocab_size" : d.V.field, "vocabulary size");
  m.gated = d.gated.value.value_or(true);
  const std::string norm = d.norm.value.value_or("rms");
  if (norm != "rms" && norm != "ln") c.fail(d.norm.field, "expected 'rms' or 'ln', got " + quoted_text(norm));
  m.norm = norm == "rms" ? NormKind::rms : NormKind::layernorm;
  m.qkv_bias = d.qkv_bias.value.value_or(false);
  m.o_bias = d.o_bias.value.value_or(false);
  m.mlp_bias = d.mlp_bias.value.value_or(false);
  m.qk_norm = d.qk_norm.value.value_or(false);
  m.qk_norm_full = d.qk_norm_full.value.value_or(false);
  m.norm_bias = d.norm_bias.value.value_or(true);
  m.norms_per_layer = d.norms_per_layer.value.value_or(2);
  m.attention_sinks = d.sinks.value.value_or(false);
  m.clamped_swiglu = d.clamped_swiglu.value.value_or(false);
  m.rope_attention_factor = d.rope_attention_factor.value.value_or(1.0);
  m.tie = d.tie.value.value_or(false);
  m.positions = d.P_pos.value.value_or(0);
  m.router_bias = d.router_bias.value.value_or(false);
  m.shared_gate = d.shared_gate.value.value_or(false);
  m.attention_dropout = d.attention_dropout;
  m.hidden_dropout = d.hidden_dropout;
  m.embedding_dropout = d.embedding_dropout;
  m.mtp_depths = d.n_mtp.value.value_or(0);

  const std::string attention = d.attention.value.value_or("gqa");
  if (attention != "gqa" && attention != "mla") {
    c.fail(d.attention.field, "expected 'gqa' or 'mla', got " + quoted_text(attention));
  }
  m.attention = attention == "mla" ? AttentionKind::mla : AttentionKind::gqa;

  if (m.attention == AttentionKind::mla) {
    m.kv_heads = m.heads;  // MLA: keys and values per query head (n_kv = a)
    m.q_lora_rank = d.r_q.value.value_or(0);
    m.kv_lora_rank = need(d.r_kv, c, d.r_kv.field.empty() ? "kv_lora_rank" : d.r_kv.field, "MLA latent rank");
    m.qk_nope_dim =
        need(d.d_nope, c, d.d_nope.field.empty() ? "qk_nope_head_dim" : d.d_nope.field, "MLA non-rotary head width");
    m.qk_rope_dim = d.d_rope.value.value_or(0);
    m.v_head_dim = need(d.d_v, c, d.d_v.field.empty() ? "v_head_dim" : d.d_v.field, "MLA value head width");
    m.head_dim = m.qk_nope_dim + m.qk_rope_dim;
  } else {
    m.kv_heads = d.n_kv.value.value_or(m.heads);
    if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
      c.fail(d.n_kv.field, "expected a divisor of the " + std::to_string(m.heads) + " query heads, got " +
                               std::to_string(m.kv_heads));
    }
    if (d.d_h.value) {
      m.head_dim = *d.d_h.value;
    } else {
      if (m.hidden % m.heads != 0) {
        c.fail(d.a.field,
               std::to_string(m.heads) + " heads do not divide the hidden size " + std::to_string(m.hidden) +
                   " and head_dim is not given; expected a divisor of the hidden size or an explicit head_dim");
      }
      m.head_dim = m.hidden / m.heads;
    }
  }

  // MoE.
  m.experts = d.E.value.value_or(0);
  m.first_dense = d.L_0.value.value_or(0);
  if (m.experts > 0) {
    m.top_k = need(d.k, c, d.k.field.empty() ? "num_experts_per_tok" : d.k.field, "experts per token");
    if (m.top_k > m.experts) {
      c.fail(d.k.field,
             "expected at most the " + std::to_string(m.experts) + " routed experts, got " + std::to_string(m.top_k));
    }
    m.expert_ffn = need(d.f_e, c, d.f_e.field.empty() ? "moe_intermediate_size" : d.f_e.field, "routed expert width");
    m.shared_experts = d.n_s.value.value_or(0);
    // DeepSeek's shared experts have the routed experts' width; Qwen2-MoE states its own.
    m.shared_expert_ffn = m.shared_experts > 0 ? d.f_se.value.value_or(m.expert_ffn) : 0;
    m.expert_groups = d.n_group.value.value_or(1);
    m.groups_per_token = d.topk_group.value.value_or(m.expert_groups);
    if (m.expert_groups < 1 || m.experts % m.expert_groups != 0) {
      c.fail(d.n_group.field, "expected a divisor of the " + std::to_string(m.experts) + " routed experts, got " +
                                  std::to_string(m.expert_groups));
    }
    if (m.groups_per_token < 1 || m.groups_per_token > m.expert_groups ||
        m.groups_per_token * (m.experts / m.expert_groups) < m.top_k) {
      c.fail(d.topk_group.field, "expected 1 to " + std::to_string(m.expert_groups) +
                                     " groups per token, holding at least the " + std::to_string(m.top_k) +
                                     " experts a token picks, got " + std::to_string(m.groups_per_token));
    }
  }
  derive_layers(d, c, m);
  m.moe_layers = std::count(m.layer_ffn.begin(), m.layer_ffn.end(), FfnKind::moe);
  derive_windows(d, c, m);
  derive_chunks(d, c, m);

  const bool has_dense = std::find(m.layer_ffn.begin(), m.layer_ffn.end(), FfnKind::dense) != m.layer_ffn.end();
  if (has_dense) {
    if (gpt2 && !d.f.value) {
      m.ffn = 4 * m.hidden;  // GPT-2: n_inner null means 4h
    } else {
      m.ffn = need(d.f, c, d.f.field.empty() ? "intermediate_size" : d.f.field, "dense FFN width");
    }
  } else {
    m.ffn = d.f.value.value_or(0);
  }
  if (m.mtp_depths > 0 && m.layers == 0) c.fail(d.n_mtp.field, "MTP needs body layers");
  return m;
}

}  // namespace

const std::vector<std::string>& known_model_types() { return kTypes; }

Model model_from_config(const YAML::Node& doc, const std::string& source, const std::string& name) {
  const Fields c(doc, source);
  const bool has_symbols = c.has("model");
  std::string type;
  if (const auto t = c.optional_string("model_type")) {
    type = *t;
  } else if (!has_symbols) {
    std::string list;
    for (const auto& k : kTypes) list += (list.empty() ? "" : ", ") + k;
    c.fail("model_type", "missing; expected one of " + list + " (or a 'model:' block of symbols)");
  }
  const bool known = std::find(kTypes.begin(), kTypes.end(), type) != kTypes.end();
  if (!type.empty() && !known && !has_symbols) {
    std::string list;
    for (const auto& k : kTypes) list += (list.empty() ? "" : ", ") + k;
    c.fail("model_type", "unknown model type " + quoted_text(type) + "; known: " + list +
                             " (or give the dimensions in a 'model:' block)");
  }
  // Llama 4's config.json nests its text model (model_type llama4_text) in text_config, beside a
  // vision encoder that text training leaves out.
  const bool nested = type == "llama4" && c.has("text_config");
  const Fields text = nested ? Fields(c.raw("text_config"), source, "text_config") : c;
  Draft d;
  if (known) read_family(type, text, d);
  if (has_symbols) read_symbols(Fields(c.raw("model"), source, "model"), d);
  std::string model_name = name;
  if (const auto n = c.optional_string("name")) model_name = *n;
  Model m = build(d, text, type.empty() ? "custom" : type, model_name);
  m.measured_census = read_census_map(c, m.input_warnings);
  return m;
}

namespace {

// The Hugging Face hub cache (huggingface_hub's constants.py): $HF_HUB_CACHE, else $HF_HOME/hub,
// else ~/.cache/huggingface/hub.
std::filesystem::path hub_cache() {
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("HF_HOME"); v && *v) return std::filesystem::path(v) / "hub";
  if (const char* v = std::getenv("HOME"); v && *v) return std::filesystem::path(v) / ".cache" / "huggingface" / "hub";
  return {};
}

// A hub id ("org/name") in the cache, offline: models--org--name/snapshots/<revision>/config.json,
// the revision refs/main names, else the only snapshot there. Empty when it is not cached.
std::filesystem::path cached_hub_config(const std::string& id) {
  namespace fs = std::filesystem;
  const auto slash = id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size() ||
      id.find('/', slash + 1) != std::string::npos) {
    return {};
  }
  const fs::path cache = hub_cache();
  if (cache.empty()) return {};
  const fs::path repo = cache / ("models--" + id.substr(0, slash) + "--" + id.substr(slash + 1));
  std::error_code ec;
  std::string revision;
  if (std::ifstream ref(repo / "refs" / "main"); ref && std::getline(ref, revision) && !revision.empty()) {
    const fs::path config = repo / "snapshots" / revision / "config.json";
    if (fs::exists(config, ec)) return config;
  }
  std::vector<fs::path> snapshots;
  for (fs::directory_iterator it(repo / "snapshots", ec), end; !ec && it != end; it.increment(ec)) {
    if (fs::exists(it->path() / "config.json", ec)) snapshots.push_back(it->path() / "config.json");
  }
  return snapshots.size() == 1 ? snapshots.front() : fs::path{};
}

}  // namespace

Model load_model(const std::string& spec, const InputOrigin& origin) {
  if (const auto preset = find_preset("models", spec)) {
    return model_from_config(parse_yaml_text(std::string(preset->content), preset->source), preset->source,
                             preset->name);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path(spec);
  if (fs::is_directory(path, ec)) path /= "config.json";
  if (!fs::exists(path, ec)) {
    // A hub id, as accelerate's estimate-memory takes one: read from the local cache, never fetched.
    if (const fs::path cached = cached_hub_config(spec); !cached.empty()) {
      return model_from_config(load_yaml_file(cached.string()), cached.string(), spec.substr(spec.find('/') + 1));
    }
    const auto slash = spec.find('/');
    const bool hub_id = slash != std::string::npos && spec.find('/', slash + 1) == std::string::npos && slash > 0 &&
                        slash + 1 < spec.size() && spec.find('.') == std::string::npos;
    if (hub_id) {
      throw InputError(
          origin.source, origin.field("--model"),
          quoted_text(spec) + " is neither a file nor a model in the local Hugging Face cache (" +
              (hub_cache() / ("models--" + spec.substr(0, slash) + "--" + spec.substr(slash + 1))).string() +
              "; set HF_HOME or HF_HUB_CACHE, or download it with huggingface-cli)");
    }
  }
  const bool looks_like_path = spec.find('/') != std::string::npos || spec.ends_with(".json") ||
                               spec.ends_with(".yaml") || spec.ends_with(".yml");
  if (!fs::exists(path, ec) && !looks_like_path) {
    throw InputError(origin.source, origin.field("--model"),
                     "unknown model preset " + quoted_text(spec) + suggestion_text(spec, preset_names("models")) +
                         "; or give a path to a config.json or model YAML, or a Hugging Face hub id (org/name) "
                         "in the local cache");
  }
  const std::string stem = path.filename() == "config.json" && path.has_parent_path()
                               ? path.parent_path().filename().string()
                               : path.stem().string();
  return model_from_config(load_yaml_file(path.string()), path.string(), stem);
}

}  // namespace meshfit
