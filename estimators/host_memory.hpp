// The second budget of a strategy that offloads model states (issue 23; memory-model.md §6.4):
// each rank's offloaded states must fit in its device's share of the node's host memory, less
// what the rank's own process and the OS keep there.
#pragma once

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Sets report.host_peak (`largest_stage_host`), host_budget and host_fits, and folds host_fits
// into report.fits. Without offload nothing is checked (host_fits stays true).
void apply_host_budget(MemoryReport& report, double largest_stage_host, const Device& d, const Strategy& s);

}  // namespace meshfit
