// Rank order tp, cp, dp, pp (fastest first) and node membership of a communication group
// (docs/spec/search-and-time.md §4). Used by the memory model's CP buffer and the time model.
#pragma once

#include <cstdint>

namespace meshfit {

struct GroupPlacement {
  bool inside_node;       // the whole group sits in one node
  std::int64_t per_node;  // n_in: members of the group in one node
};

// A group of `size` ranks with stride `stride` on nodes of `devices_per_node` devices.
GroupPlacement place_group(std::int64_t stride, std::int64_t size, std::int64_t devices_per_node);

}  // namespace meshfit
