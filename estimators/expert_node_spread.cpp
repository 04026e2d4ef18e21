#include "estimators/expert_node_spread.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace meshfit {

namespace {

// ln C(n, r); −∞ outside 0 ≤ r ≤ n. In logs: the group counts (up to C(4096, 2048)) pass a double's range.
double log_choose(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return -std::numeric_limits<double>::infinity();
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(r) + 1) -
         std::lgamma(static_cast<double>(n - r) + 1);
}

// C(pool − m, k)/C(pool, k): k distinct picks from `pool` all land outside `m` of them.
double all_outside(std::int64_t pool, std::int64_t m, std::int64_t k) {
  double p = 1;
  for (std::int64_t j = 0; j < k && p > 0; ++j)
    p *= std::max<double>(0, static_cast<double>(pool - m - j)) / static_cast<double>(pool - j);
  return p;
}

}  // namespace

double node_miss_probability(const Model& m, std::int64_t first, std::int64_t held) {
  const std::int64_t E = m.experts, k = m.top_k;
  const std::int64_t G = std::max<std::int64_t>(1, m.expert_groups);
  const std::int64_t T = std::clamp<std::int64_t>(m.groups_per_token, 1, G);
  if (E <= 0 || k <= 0 || held <= 0) return 1;
  const std::int64_t g = E / G, pool = T * g;
  // The groups the node's experts touch: q_full held whole, and at most two held in part (where
  // the node's range starts or ends inside a group).
  std::int64_t q_full = 0;
  std::vector<std::int64_t> part;
  for (std::int64_t i = 0; i < G; ++i) {
    const std::int64_t lo = std::max(first, i * g), hi = std::min(first + held, (i + 1) * g);
    if (hi - lo == g)
      ++q_full;
    else if (hi > lo)
      part.push_back(hi - lo);
  }
  const auto q = q_full + static_cast<std::int64_t>(part.size());
  // Over the T-subsets of the G groups, all alike: s_f of the whole groups and a choice of the
  // partial ones among them, the other T − s_f − s_p from the G − q untouched groups
  // (hypergeometric); then the token's k experts miss the x = s_f·g + (chosen parts) it can reach.
  const double all = log_choose(G, T);
  double miss = 0;
  for (std::size_t mask = 0; mask < (std::size_t{1} << part.size()); ++mask) {
    std::int64_t s_p = 0, x_p = 0;
    for (std::size_t j = 0; j < part.size(); ++j) {
      if (mask & (std::size_t{1} << j)) {
        ++s_p;
        x_p += part[j];
      }
    }
    for (std::int64_t s_f = 0; s_f <= std::min(q_full, T - s_p); ++s_f) {
      const double w = std::exp(log_choose(q_full, s_f) + log_choose(G - q, T - s_f - s_p) - all);
      if (w > 0) miss += w * all_outside(pool, s_f * g + x_p, k);
    }
  }
  return std::clamp(miss, 0.0, 1.0);
}

double remote_node_copies(const Model& m, std::int64_t nodes) {
  if (nodes <= 1 || m.experts <= 0) return 0;
  const std::int64_t held = m.experts / nodes;
  double hit = 0;
  for (std::int64_t n = 0; n < nodes; ++n) hit += 1 - node_miss_probability(m, n * held, held);
  return static_cast<double>(nodes - 1) / static_cast<double>(nodes) * hit;
}

}  // namespace meshfit
