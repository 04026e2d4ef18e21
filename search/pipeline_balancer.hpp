// Balanced pipeline stages (issue 23; SAPP-ND's pipeline balance beside its search): for one
// strategy with vpp = 1, the layer slots per stage — and, under full recompute, the fully
// recomputed layers per stage — that minimise the peak over stages, subject to the slowest
// stage's time per micro-batch staying within `max_tau_ratio` of the even split's.
//
// Each stage is offered up to twice the even share of slots and two more.
//
// A stage's memory and time depend on its own layers, recompute count and position (its
// micro-batches in flight, the embedding on stage 0, the head on the last), not on the others'
// (memory-model.md §5–§11, search-and-time.md §7): so a peak bound P is reachable exactly when
// the most layers each stage can hold within P (and within the time bound) add up to the model's
// slots, and the smallest such P is found by bisection over the stages' own peaks. Each stage
// then keeps as few of its layers as the total allows, trimmed from the slowest stages first, and
// recomputes as few of them as P allows (recompute costs time).
// tests/search/pipeline_balancer_test.cpp holds it to an exhaustive search of layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct BalancedLayout {
  std::vector<std::int64_t> slots;      // layer slots per stage (layers_per_vstage for vpp = 1)
  std::vector<std::int64_t> recompute;  // fully recomputed layers per stage (empty unless recompute=full)
  double peak_bytes = 0, step_s = 0, max_tau_s = 0;
  std::vector<double> stage_peaks;  // bytes per stage
};

// nullopt when the strategy cannot be balanced: vpp > 1 or DualPipeV (not supported), pp = 1
// (nothing to balance), or no layout meets the time bound.
std::optional<BalancedLayout> balance_pipeline(const Model& m, const Run& run, const Cluster& c, const Strategy& s,
                                               double max_tau_ratio);

// The run with `layout`'s lists as its layers_per_vstage / full_layers_per_vstage.
Run with_layout(const Run& run, const BalancedLayout& layout);

// The even split's figures in the same form (the layout the strategy has without lists).
BalancedLayout current_layout(const Model& m, const Run& run, const Cluster& c, const Strategy& s);

}  // namespace meshfit
