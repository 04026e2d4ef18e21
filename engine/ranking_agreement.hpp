// How well estimates order measured runs (issue 20): within one source, for every pair of runs
// whose measurements differ, whether the estimates put them in the same order. A planner chooses
// between layouts, so it must rank them right even where its absolute figures are off.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace meshfit {

struct RankedRun {
  std::string group;  // pairs are formed within a group (the source)
  double estimate = 0, measured = 0;
};

// Harrell's concordance over the pairs of one group with different measurements: a pair counts 1
// when the estimates order it as the measurements do, 1/2 when the estimates tie, 0 otherwise.
// Measurements within `resolution` of each other (a share of the larger) are not an order: that
// close, two runs differ by no more than one configuration run twice does (Megatron-Bridge's
// Qwen3-30B-A3B all-to-all run measured 57.138 and 57.137 GiB as two cases), and the pair is left
// out.
struct RankingAgreement {
  std::int64_t pairs = 0;
  double concordant = 0;
  double share() const { return pairs > 0 ? concordant / static_cast<double>(pairs) : 0; }
};
inline constexpr double kMeasuredOrderResolution = 0.01;
RankingAgreement ranking_agreement(const std::vector<RankedRun>& runs, double resolution = kMeasuredOrderResolution);

}  // namespace meshfit
