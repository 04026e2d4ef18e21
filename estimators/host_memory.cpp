#include "estimators/host_memory.hpp"

namespace meshfit {

void apply_host_budget(MemoryReport& report, double largest_stage_host, const Device& d, const Strategy& s) {
  report.host_peak = largest_stage_host;
  report.host_budget = d.host_memory - d.host_reserved;
  report.host_fits = s.offload == Offload::none || largest_stage_host <= report.host_budget;
  report.fits = report.fits && report.host_fits;
}

}  // namespace meshfit
