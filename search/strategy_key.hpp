// The canonical key of a strategy and its order (docs/spec/search-and-time.md §2.6): every
// ordering and tie-break of the search output uses it, so results do not depend on thread count.
#pragma once

#include "estimators/strategy.hpp"

namespace meshfit {

// (tp, sp, tp_comm_overlap, cp, cp_algo, cp_u, pp, vpp, pp_schedule, ep, etp, dp, zero_stage, shard_group,
//  offload, recompute, recompute_layers, micro_batch_size), lexicographic; enumerations in listed order;
// an absent recompute_layers (every layer) sorts last.
bool key_less(const Strategy& a, const Strategy& b);

}  // namespace meshfit
