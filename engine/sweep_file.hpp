// `meshfit sweep SWEEP.yaml` (issue 24): axes — models (presets, files or globs), device presets
// or files, device counts (a list, or a range as --devices takes it), sequence lengths and global
// batches — and settings every point shares (framework, headroom, a search file of pins and
// policies, what to keep per point). Each point of their product is one free search (as `meshfit
// check` runs them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/check_manifest.hpp"
#include "engine/search_file.hpp"
#include "engine/sweep_results.hpp"

namespace meshfit {

// One point: its axis values and the check entry that searches it.
struct SweepPoint {
  std::string model, device;
  std::int64_t devices = 0, seq = 0, global_batch = 0;
  CheckEntry entry;
};

struct Sweep {
  std::string source;              // the file's name, as outputs echo it
  std::vector<SweepPoint> points;  // model, device, seq, global batch, then device count (innermost)
  SweepKeep keep;                  // what the outputs carry per point (`keep`)
  // A digest of the points' axis values: shards of one sweep carry the same (merge checks it).
  std::string fingerprint() const;
};

// Reads and expands the file; a mistake is an InputError naming the file and the field.
Sweep read_sweep(const std::string& path);

}  // namespace meshfit
