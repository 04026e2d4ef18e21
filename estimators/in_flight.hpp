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

// The count vectors of one stage's interleaved 1F1B timeline (§8.3) that can hold its first
// maximum of Σ n·A for any A with every A(i,c) > 0, in order of first appearance, in one
// row-major block (states × v): the first maximum over these is the timeline's (in_flight.cpp's
// peak_candidates says why).
struct InterleavedStates {
  std::vector<std::int64_t> counts;
  std::size_t states = 0;
  // States 1, 2, … as their changes from the state before, in order: per chunk that changes,
  // by how much, and on a state's last change, the state's index (0 on the others; the states are
  // distinct, so each has at least one change). Consecutive states are stretch ends: a change
  // touches a few chunks, not all v.
  struct Change {
    std::uint32_t chunk;
    std::int32_t by;
    std::uint32_t completes;
  };
  std::vector<Change> changes;
  std::int64_t most_held = 0;  // the largest Σ_c n(c) over the states
};

// Every stage's candidate states for (pp, v, m). m enters only through n_fw = m·v, clamped by
// stage 0's warm-up (2(pp−1) + (v−1)·pp) plus one steady period (pp·v): from there on every m
// gives the same states, and interleaved_states_m maps all such m to 0 (a caller that keeps the
// states, such as the search's evaluator, keys them by it).
std::vector<InterleavedStates> interleaved_states(std::int64_t pp, std::int64_t v, std::int64_t m);
std::int64_t interleaved_states_m(std::int64_t pp, std::int64_t v, std::int64_t m);

// `chunk_bytes[c]` = A(i,c), what one micro-batch keeps in chunk c of stage i.
InFlight in_flight(const Strategy& s, std::int64_t stage, const std::vector<double>& chunk_bytes);
// The same, writing n(i,c) into `counts` (its capacity reused) and returning M_act(i). Under
// interleaved 1F1B `states` is the stage's entry of interleaved_states (made here when null).
double in_flight_into(std::vector<std::int64_t>& counts, const Strategy& s, std::int64_t stage,
                      const std::vector<double>& chunk_bytes, const InterleavedStates* states = nullptr);
// M_act(i) alone, bit for bit the same (the search's totals read no counts).
double in_flight_peak(const Strategy& s, std::int64_t stage, const std::vector<double>& chunk_bytes,
                      const InterleavedStates* states = nullptr);

}  // namespace meshfit
