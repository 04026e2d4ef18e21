// What a sweep found per point (meshfit sweep's outputs, merge's input, the HTML page's data).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshfit {

// One point's result as the outputs carry it (and merge reads it back).
struct PointResult {
  std::int64_t index = 0;
  std::string model, device, status, strategy, reason;
  std::int64_t devices = 0, seq = 0, global_batch = 0;
  std::optional<double> step_s, tokens_per_sec, peak_gib;
};

// Per (model, device, seq, global batch), in first-seen order: the smallest count that fits.
struct Smallest {
  std::string model, device;
  std::int64_t seq = 0, global_batch = 0;
  std::optional<std::int64_t> devices;
};
std::vector<Smallest> smallest_counts(const std::vector<PointResult>& points);

}  // namespace meshfit
