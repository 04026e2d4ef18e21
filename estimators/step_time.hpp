// The step-time model: one optimizer step of a strategy, T = T_pipe + T_tail, and its parts
// (shared/spec/search-and-time.md §7).
#pragma once

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
TimeReport estimate_step_time(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);
// The same into `r` (its stage storage reused) with the strategy's layout already made
// (make_layout of the same model, run and strategy): the search's allocation-free path.
void estimate_step_time_into(TimeReport& r, const Model& model, const Run& run, const Cluster& cluster,
                             const Strategy& s, const PipelineLayout& layout);

}  // namespace meshfit
