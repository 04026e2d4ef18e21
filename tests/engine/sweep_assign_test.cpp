// The order in which `mpirun meshfit sweep` hands points to its ranks (engine/sweep_assign.hpp):
// the cost estimate on hand-counted splits, and the order — biggest first, equal costs by index,
// the same whatever order the points come in.
#include <doctest/doctest.h>

#include <vector>

#include "engine/sweep_assign.hpp"
#include "engine/sweep_file.hpp"
#include "test_support.hpp"

using meshfit::biggest_first;
using meshfit::point_cost;
using meshfit::PointShape;
using meshfit::test::data_path;

TEST_CASE("a point's cost: the (tp, pp, cp) splits x the batch's divisors x 1 + the experts' divisors") {
  // 8 devices: tp 1 leaves 8 = pp x cp x dp, (pp, cp) in 4 + 3 + 2 + 1 = 10 ways (pp 1, 2, 4, 8;
  // cp any divisor of 8 / pp); tp 2: 3 + 2 + 1 = 6; tp 4: 2 + 1 = 3; tp 8: 1. 20 splits; 64 has 7
  // divisors: 140.
  CHECK(point_cost(PointShape{8, 64, 32, 0, 8}) == 140);
  // pp at most 2 layers: tp 1: 4 + 3, tp 2: 3 + 2, tp 4: 2 + 1, tp 8: 1 = 16 splits.
  CHECK(point_cost(PointShape{8, 64, 2, 0, 8}) == 16 * 7);
  // Nodes of 4: tp 8 leaves the node (one split fewer).
  CHECK(point_cost(PointShape{8, 64, 32, 0, 4}) == 19 * 7);
  // 8 experts have 4 divisors: 1 + 4 = 5 times the dense point.
  CHECK(point_cost(PointShape{8, 64, 32, 8, 8}) == 140 * 5);
  // One device: one split; 128 has 8 divisors.
  CHECK(point_cost(PointShape{1, 128, 32, 0, 8}) == 8);
  // A model that could not be read: nothing to search.
  CHECK(point_cost(PointShape{8, 64, 0, 0, 8}) == 0);
}

TEST_CASE("biggest first, equal costs by rising index, whatever the order the points come in") {
  const std::vector<std::size_t> expected = {11, 10, 12, 13};
  CHECK(biggest_first({10, 11, 12, 13}, {5, 9, 5, 1}) == expected);
  CHECK(biggest_first({13, 12, 11, 10}, {1, 5, 9, 5}) == expected);
  CHECK(biggest_first({12, 10, 13, 11}, {5, 5, 1, 9}) == expected);
  CHECK(biggest_first({}, {}).empty());
}

TEST_CASE("tests/data/sweep/small.yaml's 24 points in hand-out order") {
  // Dense models of 32 and 36 layers on nodes of 8: 8 devices make 20 splits, 16 make 34 (35 less
  // tp 16), 32 make 52 (56 less tp 16's 3 and tp 32's 1); a global batch of 64 has 7 divisors, 128
  // has 8. The points run model, device, batch, then count (8, 16, 32) innermost, so index 3g + c
  // + 6 x (model, device) pair: 32 devices at batch 128 (52 x 8 = 416) first, then 32 at 64 (364),
  // 16 at 128 (272), 16 at 64 (238), 8 at 128 (160), 8 at 64 (140); each four in index order.
  const meshfit::Sweep sw = meshfit::read_sweep(data_path("sweep/small.yaml"));
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < sw.points.size(); ++i) all.push_back(i);
  const auto cost = meshfit::sweep_costs(sw, all);
  CHECK(cost[5] == 416);
  CHECK(cost[20] == 364);
  CHECK(cost[0] == 140);
  const std::vector<std::size_t> expected = {5, 11, 17, 23, 2, 8, 14, 20, 4, 10, 16, 22,
                                             1, 7,  13, 19, 3, 9, 15, 21, 0, 6,  12, 18};
  CHECK(biggest_first(all, cost) == expected);
}
