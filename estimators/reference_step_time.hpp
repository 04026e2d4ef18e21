// The step-time model as docs/spec/search-and-time.md §7 states it, written plainly: per stage a
// walk over its chunks' layers, each adding its own compute and TP/CP/EP communication (§7.2–
// §7.5), the ends of the model and the pipeline hops, then the stage's data-parallel term
// (data_parallel_time.hpp) and the step from the stages (step_totals.hpp). No layout plan, twin
// stage, cache, memo or scratch.
//
// estimate_step_time (step_time_evaluator.cpp) computes the same figures with its reuse across strategies;
// tests/estimators/reference_models_test.cpp holds the two together. The fast path adds a
// stage's n equal layers as n·t, this walk adds t n times: they agree to 1e-12 relative.
#pragma once

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
TimeReport reference_step_time(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);

}  // namespace meshfit
