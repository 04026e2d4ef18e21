// The order in which the ranks of `mpirun meshfit sweep` are handed a sweep's points (issue 24):
// an estimate of each point's search time and the points sorted by it, biggest first, so that the
// longest searches start early and the last ones to finish are short. Deterministic — no clock
// enters it — and it never changes an output: rank 0 writes the results in point order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace meshfit {

struct Sweep;

// What a point's estimate reads: its device count and global batch, its model's body layers and
// routed experts (0 for a dense model), the devices per node of its device.
struct PointShape {
  std::int64_t devices = 0, global_batch = 0, layers = 0, experts = 0, devices_per_node = 8;
};

// An estimate of a point's search time, in no unit (comparable between points only); 0 for a
// point whose model could not be read (it fails at once).
std::int64_t point_cost(const PointShape& shape);

// `points` ordered by falling cost (`cost[k]` is points[k]'s), equal costs by rising point index.
std::vector<std::size_t> biggest_first(const std::vector<std::size_t>& points, const std::vector<std::int64_t>& cost);

// The costs of `points` (indices into sw.points), each model and device read once.
std::vector<std::int64_t> sweep_costs(const Sweep& sw, const std::vector<std::size_t>& points);

}  // namespace meshfit
