// The pipeline makespan of a schedule from the stages' per-micro-batch times
// (docs/spec/search-and-time.md §7.8).
#pragma once

#include <vector>

#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

double pipeline_makespan(const Strategy& s, const std::vector<StageTime>& stages);

// What the EP overlap cannot hide in a step: Megatron-Core's combined 1F1B pairs one micro-batch's
// forward with another's backward (pipeline_parallel/combined_1f1b.py), so a forward or backward
// run without a partner exposes the EP time its layers' overlap would hide (StageTime::ep_hidden).
// Without PP the first micro-batch's forward and the last one's backward run alone: one
// micro-batch's worth. With PP a rank's warm-up runs W_i chunk forwards alone and its cool-down as
// many chunk backwards, at most the m·v chunks there are: W_i/v micro-batches' worth. Interleaved
// (which Megatron's overlap requires with PP, transformer_config.py): W_i = 2·(pp − i − 1) +
// (v − 1)·pp + 1, the usual warm-up and the one forward the overlap adds (schedules.py); plain
// 1F1B, taken the same way: W_i = pp − i − 1 + 1. The rank with the most sets the step's share (the
// warm-up and cool-down lie on the pipeline's critical path).
double ep_overlap_unpaired(const Strategy& s, const std::vector<StageTime>& stages);

}  // namespace meshfit
