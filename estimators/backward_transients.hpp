// Transient candidates of the backward pass that do not depend on a single layer's position
// (docs/spec/memory-model.md §9.3, §9.6, §9.7).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// §9.3: logits and loss on the head's stage.
double logits_transient(const Run& run, const Strategy& s, double n_cp, double v_pad);
// §9.6: kv_dim, the width per TP rank of the K and V heads the CP exchange moves.
double cp_kv_dim(const Model& m, const Strategy& s);
// §9.6: one chunk of the CP key/value exchange (K and V at 2 bytes each, the seed's 4).
double cp_chunk_bytes(const Model& m, const Run& run, const Strategy& s);
// §9.6: CP key/value communication buffers (the seed's cp_comm_buffer); 0 without CP.
double cp_buffer_transient(const Model& m, const Run& run, const Strategy& s, std::int64_t devices_per_node);
// §9.7: expert all-to-all send and receive buffers of an MoE layer.
double ep_buffer_transient(const Model& m, const Run& run, const Strategy& s, double n_cp);

// §9.1's Xsp: with SP the layer's input gathered across tp for its backward, per micro-batch.
double sp_gathered_input(const Model& m, const Run& run, const Strategy& s);

// §9.1: Tr_layer of a layer, its X − K_after (`base`) plus what the ZeRO/FSDP setting and SP add:
// Pg + Rg (zero_buffers.hpp) and Xsp, in that order.
inline double layer_transient(double base, double gathered, double reduce_buffers, double x_sp) {
  return base + gathered + reduce_buffers + x_sp;
}

// §9.1's largest Tr_layer of a stage from its best candidate per layer kind (index 0 dense, 1
// MoE; `base` −∞ where the stage offers none of the kind): the larger, or on a tie the one the
// backward scan met first (smaller `order`). kind −1 when the stage offers none.
struct LayerCandidate {
  double transient = 0;
  int kind = -1;
};
inline LayerCandidate largest_layer_candidate(const std::array<double, 2>& base,
                                              const std::array<std::int64_t, 2>& order,
                                              const std::array<double, 2>& gathered,
                                              const std::array<double, 2>& reduce_buffers, double x_sp) {
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  LayerCandidate best{kNone, -1};
  std::int64_t best_order = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    if (base[k] == kNone) continue;
    const double tr = layer_transient(base[k], gathered[k], reduce_buffers[k], x_sp);
    if (tr > best.transient || (tr == best.transient && order[k] < best_order)) {
      best = {tr, static_cast<int>(k)};
      best_order = order[k];
    }
  }
  if (best.kind < 0) best.transient = 0;
  return best;
}

// §9.8: DualPipeV's two chunks overlap: the kept bytes of one chunk (A(i,c)) under the other's
// largest Tr_layer (0 where it has none), the larger of the two pairings.
inline double dualpipev_transient(const std::array<double, 2>& chunk_kept, const std::array<double, 2>& chunk_layer) {
  return std::max(chunk_kept[0] + chunk_layer[1], chunk_kept[1] + chunk_layer[0]);
}

// §9: the one transient on top of the in-flight activations, the largest candidate (never below 0).
inline double largest_transient(double layer, double attn, double logits, double fsdp, double bucket, double cp,
                                double ep) {
  return std::max({0.0, layer, attn, logits, fsdp, bucket, cp, ep});
}

}  // namespace meshfit
