#include "engine/sweep_results.hpp"

#include <algorithm>

namespace meshfit {

std::vector<Smallest> smallest_counts(const std::vector<PointResult>& points) {
  std::vector<Smallest> out;
  for (const auto& x : points) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Smallest& s) {
      return s.model == x.model && s.device == x.device && s.seq == x.seq && s.global_batch == x.global_batch;
    });
    if (it == out.end()) it = out.insert(out.end(), Smallest{x.model, x.device, x.seq, x.global_batch, {}});
    if (x.status == "fits" && (!it->devices || x.devices < *it->devices)) it->devices = x.devices;
  }
  return out;
}

}  // namespace meshfit
