// How many nodes a token's experts reach (expert_node_spread.hpp): hand-counted with the
// hypergeometric chance that a node's experts are among the token's, checked against the plain
// product Π_{j<k}(E − held − j)/(E − j) where no group limit applies.
#include <doctest/doctest.h>

#include "estimators/expert_node_spread.hpp"

using namespace meshfit;

namespace {

Model routed(std::int64_t E, std::int64_t k, std::int64_t groups, std::int64_t per_token) {
  Model m;
  m.experts = E;
  m.top_k = k;
  m.expert_groups = groups;
  m.groups_per_token = per_token;
  return m;
}

// k picks out of `pool`, all outside `m` of them.
double outside(double pool, double m, int k) {
  double p = 1;
  for (int j = 0; j < k; ++j) p *= (pool - m - j) / (pool - j);
  return p;
}

}  // namespace

TEST_CASE("without a group limit a node is missed with the plain product") {
  // Qwen3-30B-A3B over two nodes: 128 experts, top 8, 64 per node.
  const Model q = routed(128, 8, 1, 1);
  const double miss = outside(128, 64, 8);
  CHECK(node_miss_probability(q, 0, 64) == doctest::Approx(miss).epsilon(1e-12));
  CHECK(node_miss_probability(q, 64, 64) == doctest::Approx(miss).epsilon(1e-12));
  // The other node, reached unless every expert is at home: (2 − 1)/2 · 2 · (1 − miss).
  CHECK(remote_node_copies(q, 2) == doctest::Approx(1 - miss).epsilon(1e-12));
  CHECK(remote_node_copies(q, 1) == 0);
}

TEST_CASE("DeepSeek-V3's node-limited routing: 4 of 8 groups, one group per node") {
  // 256 experts in 8 groups of 32, 4 groups per token, top 8; EP 64 over 8 nodes holds one group
  // per node. A node is reached iff its group is chosen (4/8) and one of the 8 picks among the
  // chosen 128 experts lands in its 32.
  const Model ds = routed(256, 8, 8, 4);
  const double hit = 0.5 * (1 - outside(128, 32, 8));
  CHECK(node_miss_probability(ds, 96, 32) == doctest::Approx(1 - hit).epsilon(1e-12));
  // 7/8 of the 8 nodes' reach: about 3.2 copies, against 4.6 without the limit.
  CHECK(remote_node_copies(ds, 8) == doctest::Approx(7.0 / 8 * 8 * hit).epsilon(1e-12));
  CHECK(remote_node_copies(ds, 8) == doctest::Approx(3.17).epsilon(0.005));
  CHECK(remote_node_copies(routed(256, 8, 1, 1), 8) == doctest::Approx(7.0 / 8 * 8 * (1 - outside(256, 32, 8))));
}

TEST_CASE("a node holding two groups: the number of its groups chosen is hypergeometric") {
  // 4 nodes of 64 experts (two groups each): of the C(8, 4) = 70 choices, C(6, 4) = 15 pick
  // neither of the node's groups, 2·C(6, 3) = 40 one, C(6, 2) = 15 both.
  const Model ds = routed(256, 8, 8, 4);
  const double miss = (15 * 1.0 + 40 * outside(128, 32, 8) + 15 * outside(128, 64, 8)) / 70;
  CHECK(node_miss_probability(ds, 64, 64) == doctest::Approx(miss).epsilon(1e-12));
}

TEST_CASE("a node holding part of one group, and one straddling two") {
  // 4 groups of 64, 2 per token, 8 nodes of 32: the node's group is chosen half the time.
  CHECK(node_miss_probability(routed(256, 8, 4, 2), 32, 32) ==
        doctest::Approx(0.5 + 0.5 * outside(128, 32, 8)).epsilon(1e-12));
  // 12 experts in 3 groups of 4, one group per token, top 2; the node holds experts 2..7: two of
  // group 0 and all of group 1. Group 0 chosen: both picks outside its 2 with chance 1/6; group 1:
  // never missed; group 2: always missed. (1/6 + 0 + 1)/3 = 7/18.
  CHECK(node_miss_probability(routed(12, 2, 3, 1), 2, 6) == doctest::Approx(7.0 / 18).epsilon(1e-12));
}

TEST_CASE("one expert per group: any group limit leaves the picks uniform, and counts stay finite") {
  // 4,096 groups of one expert, 2,048 a token, then 8 of those 2,048: 8 experts uniformly at random,
  // as without a limit. C(4096, 2048) is beyond a double; the result must still be the product.
  const Model wide = routed(4096, 8, 4096, 2048);
  CHECK(node_miss_probability(wide, 0, 2048) == doctest::Approx(outside(4096, 2048, 8)).epsilon(1e-9));
  CHECK(remote_node_copies(wide, 2) == doctest::Approx(1 - outside(4096, 2048, 8)).epsilon(1e-9));
}
