// HBM traffic of an MoE layer's token routing (search-and-time.md §7.3, issue 20): the router's
// scores and top-k, the permutation of tokens into expert order and back, the sort of received
// rows by local expert, and, under FP8, the quantisation of the grouped GEMMs' operands. These
// kernels are memory-bound and scale with tokens × k × h where the expert GEMMs scale with
// tokens × k × h × f, so they weigh most on small, fine-grained MoE models (Qwen3-30B-A3B,
// GPT-OSS-120B), next to their GEMMs as much as 0.6-0.9 of their time.
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct MoeRoutingBytes {
  double forward = 0, backward = 0;
  double sac_recompute = 0;  // what torchtitan's per-op SAC runs again in the backward
};

// Bytes one device moves per token of the micro-batch's b·s/cp sequence tokens, for one MoE
// layer, beyond the expert activation already priced as elementwise traffic: 0 unless the
// framework profile names its routing kernels (FrameworkProfile::moe_routing). `rho` is ρ_e, the
// busiest rank's routed-token load (§7.2).
MoeRoutingBytes moe_routing_bytes(const Model& m, const Run& run, const Strategy& s, double rho);

// gpt-oss's clamped activation under Megatron-Core: two eager clamps and a concatenation before the
// compiled kernel (fused_bias_geglu.py), bytes per routed row in its forward (0 for other models).
double megatron_clamp_bytes_per_row(const Model& m);

}  // namespace meshfit
