// Transient candidates of the backward pass that do not depend on a single layer's position
// (docs/spec/memory-model.md §9.3, §9.6, §9.7).
#pragma once

#include <array>
#include <cstdint>

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

// §9.1: Tr_layer of a layer, its X − K_after (`base`) plus what the ZeRO/FSDP setting and SP add:
// Pg + Rg (zero_buffers.hpp) and Xsp, in that order.
double layer_transient(double base, double gathered, double reduce_buffers, double x_sp);

// §9.1's largest Tr_layer of a stage from its best candidate per layer kind (index 0 dense, 1
// MoE; `base` −∞ where the stage offers none of the kind): the larger, or on a tie the one the
// backward scan met first (smaller `order`). kind −1 when the stage offers none.
struct LayerCandidate {
  double transient = 0;
  int kind = -1;
};
LayerCandidate largest_layer_candidate(const std::array<double, 2>& base, const std::array<std::int64_t, 2>& order,
                                       const std::array<double, 2>& gathered,
                                       const std::array<double, 2>& reduce_buffers, double x_sp);

// §9.8: DualPipeV's two chunks overlap: the kept bytes of one chunk (A(i,c)) under the other's
// largest Tr_layer (0 where it has none), the larger of the two pairings.
double dualpipev_transient(const std::array<double, 2>& chunk_kept, const std::array<double, 2>& chunk_layer);

// §9: the one transient on top of the in-flight activations, the largest candidate (never below 0).
double largest_transient(double layer, double attn, double logits, double fsdp, double bucket, double cp, double ep);

}  // namespace meshfit
