// Parameter counts of a layer and of the whole model (docs/spec/memory-model.md §4).
#pragma once

#include <cstdint>

#include "estimators/model.hpp"

namespace meshfit {

// One body layer's parameters, split by how parallelism divides them (§4.1). "split" parts are
// divided by tp (or ep·etp for routed experts); "repl" parts are held whole by every TP rank.
struct LayerParams {
  std::int64_t attention_split = 0;
  std::int64_t attention_repl = 0;  // o bias, qk-norm, MLA down-projections and their norms
  std::int64_t norms = 0;           // the two layer norms, 2·w_n (§4.4)
  std::int64_t dense_split = 0;     // dense FFN matrices (+ up biases)
  std::int64_t dense_repl = 0;      // dense FFN down bias
  std::int64_t router = 0;          // E·h (+ E with a router bias), replicated (§4.6)
  std::int64_t routed = 0;          // P_rt, all E routed experts
  std::int64_t shared_split = 0;    // shared experts
  std::int64_t shared_repl = 0;     // shared-expert gate

  std::int64_t non_expert_split() const { return attention_split + dense_split; }  // P_ne,split
  std::int64_t non_expert_repl() const {                                           // P_ne,repl
    return attention_repl + norms + dense_repl + router;
  }
  std::int64_t attention() const { return attention_split + attention_repl; }
  std::int64_t total() const { return non_expert_split() + non_expert_repl() + routed + shared_split + shared_repl; }
};

// Parameters of one body layer with FFN flavour `ffn`. `kv_heads_counted` is n_kv,r: the model's
// n_kv for totals, max(n_kv, tp) when counting what one TP group holds (§4.2).
LayerParams layer_params(const Model& model, FfnKind ffn, std::int64_t kv_heads_counted);

// Extra parameters of one MTP depth beyond its body layer: eh_proj (2h·h, split) and three norms
// (replicated) (§4.8).
std::int64_t mtp_extra_split(const Model& model);
std::int64_t mtp_extra_repl(const Model& model);

// The whole model at tp = 1, with the vocabulary as the config states it (§4.7, §4.10).
struct ModelParams {
  std::int64_t embedding = 0;  // V·h
  std::int64_t positions = 0;  // P_pos·h
  std::int64_t attention = 0;  // all body layers
  std::int64_t dense_ffn = 0;
  std::int64_t routed_experts = 0;
  std::int64_t shared_experts = 0;
  std::int64_t router = 0;
  std::int64_t layer_norms = 0;
  std::int64_t final_norm = 0;
  std::int64_t output = 0;            // V·h, 0 when tied
  std::int64_t mtp = 0;               // n_mtp depths, sharing the embedding and head
  std::int64_t mtp_table_copies = 0;  // the embedding and head copies a checkpoint stores per depth
  std::int64_t activated = 0;         // touched by one token: k routed + shared experts per MoE layer

  std::int64_t main_total() const {
    return embedding + positions + attention + dense_ffn + routed_experts + shared_experts + router + layer_norms +
           final_norm + output;
  }
  std::int64_t total_with_mtp() const { return main_total() + mtp; }
  std::int64_t checkpoint_total() const { return total_with_mtp() + mtp_table_copies; }
};

ModelParams model_params(const Model& model);

}  // namespace meshfit
