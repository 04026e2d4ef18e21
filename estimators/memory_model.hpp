// The memory model: per-stage peak memory of one strategy (shared/spec/memory-model.md §1).
#pragma once

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
MemoryReport estimate_memory(const Model& model, const Run& run, const Cluster& cluster,
                             const Strategy& s, double headroom_bytes = 0);

}  // namespace meshfit
