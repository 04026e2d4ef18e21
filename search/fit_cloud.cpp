#include "search/fit_cloud.hpp"

#include <algorithm>
#include <cmath>

namespace meshfit {

namespace {
constexpr std::size_t kCells = static_cast<std::size_t>(FitCloud::kMemBins) * FitCloud::kTimeBins;
}

void FitCloud::add(double peak_bytes, double budget, double step_s) {
  if (!(budget > 0) || !(step_s > 0) || !std::isfinite(step_s)) return;
  if (bits.empty()) bits.assign((kCells + 63) / 64, 0);
  const int x = std::clamp(static_cast<int>(peak_bytes / budget * kMemBins), 0, kMemBins - 1);
  const double t = (std::log10(step_s) - kLogMin) / (kLogMax - kLogMin) * kTimeBins;
  const int y = std::clamp(static_cast<int>(t), 0, kTimeBins - 1);
  const std::size_t cell = static_cast<std::size_t>(y) * kMemBins + static_cast<std::size_t>(x);
  bits[cell / 64] |= std::uint64_t{1} << (cell % 64);
}

void FitCloud::merge(const FitCloud& o) {
  if (o.bits.empty()) return;
  if (bits.empty()) {
    bits = o.bits;
    return;
  }
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] |= o.bits[i];
}

bool FitCloud::test(int x, int y) const {
  if (bits.empty()) return false;
  const std::size_t cell = static_cast<std::size_t>(y) * kMemBins + static_cast<std::size_t>(x);
  return (bits[cell / 64] >> (cell % 64)) & 1u;
}

double FitCloud::mem_at(int x, double budget) { return (x + 0.5) / kMemBins * budget; }

double FitCloud::time_at(int y) { return std::pow(10.0, kLogMin + (y + 0.5) / kTimeBins * (kLogMax - kLogMin)); }

}  // namespace meshfit
