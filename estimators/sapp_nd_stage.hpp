// What SAPP-ND adds to a stage beyond the terms meshfit shares with it (memory-model.md §17.5):
// the per-layer communication buffers it holds as activations (SeedConvention::resident_comm)
// and the stage's last node it re-adds for the backward (last_node_overhead). One function
// for both the reference walk and the search's evaluator, so that the two stay equal.
#pragma once

#include <cstdint>
#include <vector>

#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit::sapp_nd {

// One body layer's communication buffer as SAPP-ND's EvalLayerComm prices it, in its units
// (some terms count elements and are added as bytes): a fully recomputed layer holds its DP
// term; another max(dp, tp, cp) + ep with `micro` micro-batches in flight (configs_eval
// default.yaml's comm_expr).
double layer_comm(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, bool full, double micro);
// The embedding's (EvalHead: max(dp, tp)) and the output's (EvalTail.comm_output, with MTP).
double embedding_comm(const Model& m, const Run& run, const Strategy& s);
double output_comm(const Model& m, const Strategy& s);

struct SeedStage {
  double comm = 0;           // resident_comm: every node's buffer
  double overhead = 0;       // last_node_overhead: the last node's activations at one micro-batch
  double overhead_comm = 0;  // and its buffer (held when both conventions are on)
};
// Stage `stage` with the in-flight counts of its chunks (SAPP-ND's micro factors).
SeedStage seed_stage(const Model& m, const Run& run, const Strategy& s, const PipelineLayout& layout,
                     std::int64_t stage, const std::vector<std::int64_t>& inflight);

// Under --rules sapp-nd: `st` with the conventions' figures (its transient replaced by the last
// node under last_node_overhead). Nothing under the default rules.
void apply_seed_stage(StageMemory& st, const Model& m, const Run& run, const Strategy& s, const PipelineLayout& layout,
                      const std::vector<std::int64_t>& inflight);

}  // namespace meshfit::sapp_nd
