// Where the fitting strategies of a search lie, for a picture of the space (issue 7's chart):
// one bit per cell of a fixed grid over peak memory in [0, budget] and log10 of the step time in
// [kLogMin, kLogMax]. Its size is fixed whatever the space (the search stays bounded in memory),
// and the union of per-thread clouds does not depend on the order of the merge (deterministic).
#pragma once

#include <cstdint>
#include <vector>

namespace meshfit {

struct FitCloud {
  static constexpr int kMemBins = 320, kTimeBins = 900;
  static constexpr double kLogMin = -3, kLogMax = 6;  // 1 ms to 11.6 days per step

  std::vector<std::uint64_t> bits;  // empty until the first point

  void add(double peak_bytes, double budget, double step_s);
  void merge(const FitCloud& other);
  bool empty() const { return bits.empty(); }
  bool test(int mem_bin, int time_bin) const;
  // The centre of a cell: bytes and seconds.
  static double mem_at(int mem_bin, double budget);
  static double time_at(int time_bin);
};

}  // namespace meshfit
