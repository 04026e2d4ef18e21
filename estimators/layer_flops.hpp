// Forward FLOPs of the ops of one layer for one micro-batch, before sharding
// (docs/spec/search-and-time.md §7.2). One fused multiply-add = 2 FLOP.
#pragma once

#include <array>
#include <cstdint>

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// What an op is, for the backward rule and the recompute rules of §7.2.
enum class OpRole : std::uint8_t {
  attention_proj,  // linear: q/qkv, kv down, o
  attention_up,    // linear: MLA up-projections (query up and kv up)
  core,            // attention core (QKᵀ and PV), backward ρ_core × forward
  ffn_proj,        // linear: dense fc1/fc2, routed expert fc1/fc2
  router,          // linear, outside the FFN share of hyperparallel (ruling 9)
  shared_expert,   // linear, outside the FFN share of hyperparallel (ruling 9)
};

struct FlopOp {
  double flops = 0;  // forward, whole layer, one micro-batch
  OpRole role = OpRole::attention_proj;
};

struct LayerFlops {
  std::array<FlopOp, 13> ops{};
  std::size_t count = 0;
  void add(double flops, OpRole role) {
    if (flops > 0) ops[count++] = {flops, role};  // an op a model does not have is not a kernel
  }
  double total() const;
};

// The attention core's forward FLOPs among a layer's ops.
double flops_core(const LayerFlops& f);

// κ: causal-mask factor on the attention core (§7.1).
inline constexpr double kCausalFactor = 0.5;

// The attention core's share of a full causal core, over the body layers: 1 without windows. A
// query of a layer with window w < s attends min(i + 1, w) keys, w·s − w(w − 1)/2 in all against a
// causal layer's s²/2 (κ). The layers' mean: exact for the model's total, and for a stage holding
// a whole number of the window pattern (gpt-oss and Gemma 2 alternate, Gemma 3 repeats six).
// A chunked layer (Llama 4) confines query i to the (i mod c) + 1 keys of its own chunk.
double window_share(const Model& m, double seq);

// Routed-expert rows one device computes per token of its b·s/cp micro-batch shard (§7.3): each
// token's k·ρ_e assignments, split with every op over the tp·cp devices of the expert grid.
inline double routed_rows_per_token(const Model& m, const Strategy& s, double rho) {
  return static_cast<double>(m.top_k) * rho / static_cast<double>(s.tp);
}

// §7.2 for a body layer with FFN flavour `ffn`; `load` is ρ_e for the routed experts.
LayerFlops layer_flops(const Model& m, FfnKind ffn, double tokens, double seq, double micro_batch, double load);
// The output layer: 2·n_tok·h·V.
double logits_flops(const Model& m, double tokens, double vocab);
// An MTP depth's eh_proj: 2·n_tok·2h·h.
double mtp_projection_flops(const Model& m, double tokens);
// F_seq of §7.10: one sequence's forward with V, κ on the core, ρ_e = 1, the MTP depths, no
// recompute.
double sequence_flops(const Model& m, double seq);

}  // namespace meshfit
