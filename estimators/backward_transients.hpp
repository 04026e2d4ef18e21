// Transient candidates of the backward pass that do not depend on a single layer's position
// (docs/spec/memory-model.md §9.3, §9.6, §9.7).
#pragma once

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

}  // namespace meshfit
