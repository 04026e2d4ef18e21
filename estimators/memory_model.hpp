// The memory model: per-stage peak memory of one strategy (shared/spec/memory-model.md §1).
#pragma once

#include <array>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
MemoryReport estimate_memory(const Model& model, const Run& run, const Cluster& cluster,
                             const Strategy& s, double headroom_bytes = 0);

// A run of consecutive body layers of one kind and one recompute mode in a chunk: within it every
// layer keeps and works the same bytes, so the backward scan of §9.1 needs only its last layer.
struct LayerRun {
  double kept = 0, working = 0, pg = 0, rg = 0;
  std::int64_t first = 0, count = 0;  // body index of its first layer, layers in the run
  bool full = false;
};

// Storage an estimate works in. A caller that estimates many strategies (the search) keeps one
// per thread with its MemoryReport, so that an estimate allocates nothing once warm.
struct MemoryScratch {
  PipelineLayout layout;
  LayoutKey layout_key;  // what `layout` was made from: consecutive estimates often share it
  std::vector<LayerRun> runs;
  std::vector<double> tr_layer_chunk, full_kept;
  std::vector<std::array<std::int64_t, 2>> full_layers;
};

// estimate_memory into `out`, reusing its storage and `scratch`'s.
void estimate_memory_into(MemoryReport& out, MemoryScratch& scratch, const Model& model, const Run& run,
                          const Cluster& cluster, const Strategy& s, double headroom_bytes = 0);

}  // namespace meshfit
