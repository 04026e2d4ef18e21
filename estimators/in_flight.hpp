// Micro-batches in flight per chunk of a stage, per pipeline schedule, and the activation peak
// they give (docs/spec/memory-model.md §8).
#pragma once

#include <cstdint>
#include <vector>

#include "estimators/strategy.hpp"

namespace meshfit {

struct InFlight {
  double peak = 0;                   // M_act(i) = max over the timeline of Σ_c n(i,c)·A(i,c)
  std::vector<std::int64_t> counts;  // n(i,c) at the peak (first time it is reached)
};

// `chunk_bytes[c]` = A(i,c), what one micro-batch keeps in chunk c of stage i.
InFlight in_flight(const Strategy& s, std::int64_t stage, const std::vector<double>& chunk_bytes);
// The same, writing n(i,c) into `counts` (its capacity reused: no allocation once warm) and
// returning M_act(i); the memory model's hot path.
double in_flight_into(std::vector<std::int64_t>& counts, const Strategy& s, std::int64_t stage,
                      const std::vector<double>& chunk_bytes);
// M_act(i) alone, bit for bit the same (the search's totals read no counts).
double in_flight_peak(const Strategy& s, std::int64_t stage, const std::vector<double>& chunk_bytes);

}  // namespace meshfit
