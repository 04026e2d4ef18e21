// The step from its stages (docs/spec/search-and-time.md §7.8–§7.10): the pipeline makespan,
// the tail, the time terms of cli.md, tokens per second and MFU. Used by the step-time model and
// its plain reference alike.
#pragma once

#include "estimators/device.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

// Fills `r` from r.stages (each with its τ, tail and terms) and F_model.
void step_from_stages(TimeReport& r, const Run& run, const Device& d, const Strategy& s, double model_flops);

}  // namespace meshfit
