// The memory model as docs/spec/memory-model.md states it, written plainly: the layout (§5),
// then per stage a walk over its chunks and their layers — each layer's kept bytes and backward
// candidate (§7, §9.1), the micro-batches in flight (§8), each layer's model states (§6) — and the
// totals (§9, §11). No cache, memo, layout plan, twin chunk, scratch or per-thread state: it
// composes the per-term functions (activation_census, layer_activations, model_states,
// backward_transients, overheads, sapp_nd_rules) and nothing else of the fast path.
//
// estimate_memory (memory_evaluator.cpp) computes the same figures with its reuse across strategies;
// tests/estimators/reference_models_test.cpp holds the two together on thousands of strategies.
// Where they differ it is in the last bits of a sum: the fast path adds a run of n equal layers
// as n·x, this walk adds x n times (the test's tolerance, 1e-12 relative, says so).
#pragma once

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
MemoryReport reference_memory(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s,
                              double headroom_bytes = 0);

}  // namespace meshfit
