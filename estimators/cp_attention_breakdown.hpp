// The seed's act_cp_layer (docs/spec/memory-model.md §10): one attention layer's CP terms,
// reported with a strategy that has cp > 1. Informational: it assumes materialised attention with
// fp32 scores and softmax and is not added to the peak (the census and Tr_cp carry the memory).
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct CpAttentionBreakdown {
  double kv_cache = 0, attention_scores = 0, softmax_outputs = 0, dropout_mask = 0;
  double s2_reduction = 0, kv_reduction = 0, comm_buffer = 0;
  double total_memory = 0, total_reduction = 0;
  const char* attention_type = "mha";  // mla if r_kv > 0, gqa if n_kv < a, else mha
};

// `comm_buffer` is the Tr_cp of §9.6 (or of §17.3 item 11 under --rules sapp-nd).
CpAttentionBreakdown cp_attention_breakdown(const Model& m, const Run& run, const Strategy& s, double comm_buffer);

}  // namespace meshfit
