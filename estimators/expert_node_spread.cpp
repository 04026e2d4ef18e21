#include "estimators/expert_node_spread.hpp"

#include <algorithm>
#include <vector>

namespace meshfit {

namespace {

// C(n, r) as a double (0 outside 0 ≤ r ≤ n); the group counts here stay far below its range.
double choose(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0;
  r = std::min(r, n - r);
  double c = 1;
  for (std::int64_t j = 0; j < r; ++j) c = c * static_cast<double>(n - j) / static_cast<double>(j + 1);
  return c;
}

// C(pool − m, k)/C(pool, k): k distinct picks from `pool` all land outside `m` of them.
double all_outside(std::int64_t pool, std::int64_t m, std::int64_t k) {
  double p = 1;
  for (std::int64_t j = 0; j < k; ++j)
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
  // The node's experts per group it touches; the other groups hold none of them.
  std::vector<std::int64_t> overlap;
  for (std::int64_t i = 0; i < G; ++i) {
    const std::int64_t lo = std::max(first, i * g), hi = std::min(first + held, (i + 1) * g);
    if (hi > lo) overlap.push_back(hi - lo);
  }
  const auto q = static_cast<std::int64_t>(overlap.size());
  // ways[s][x]: subsets of s touched groups holding x of the node's experts.
  std::vector<std::vector<double>> ways(static_cast<std::size_t>(q + 1),
                                        std::vector<double>(static_cast<std::size_t>(held + 1), 0));
  ways[0][0] = 1;
  for (const std::int64_t c : overlap) {
    for (std::int64_t s = q - 1; s >= 0; --s) {
      for (std::int64_t x = held - c; x >= 0; --x) {
        ways[static_cast<std::size_t>(s + 1)][static_cast<std::size_t>(x + c)] +=
            ways[static_cast<std::size_t>(s)][static_cast<std::size_t>(x)];
      }
    }
  }
  // Complete each with T − s of the G − q untouched groups, over all C(G, T) choices alike.
  double miss = 0;
  for (std::int64_t s = 0; s <= std::min(q, T); ++s) {
    const double rest = choose(G - q, T - s);
    if (rest == 0) continue;
    for (std::int64_t x = 0; x <= held; ++x) {
      const double w = ways[static_cast<std::size_t>(s)][static_cast<std::size_t>(x)];
      if (w > 0) miss += w * rest * all_outside(pool, x, k);
    }
  }
  return miss / choose(G, T);
}

double remote_node_copies(const Model& m, std::int64_t nodes) {
  if (nodes <= 1 || m.experts <= 0) return 0;
  const std::int64_t held = m.experts / nodes;
  double hit = 0;
  for (std::int64_t n = 0; n < nodes; ++n) hit += 1 - node_miss_probability(m, n * held, held);
  return static_cast<double>(nodes - 1) / static_cast<double>(nodes) * hit;
}

}  // namespace meshfit
