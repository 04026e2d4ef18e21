#include "estimators/rank_layout.hpp"

#include <numeric>

namespace meshfit {

// §4 "Node membership": inside a node if δ·n_g ≤ D and D mod (δ·n_g) = 0; otherwise
// n_in = gcd(n_g, D/δ) when δ < D and D mod δ = 0; otherwise 1. Exact for powers of two.
GroupPlacement place_group(std::int64_t stride, std::int64_t size, std::int64_t devices_per_node) {
  const std::int64_t D = devices_per_node;
  if (stride * size <= D && D % (stride * size) == 0) return {true, size};
  if (stride < D && D % stride == 0) return {false, std::gcd(size, D / stride)};
  return {false, 1};
}

}  // namespace meshfit
