// The step-time model: one optimizer step of a strategy, T = T_pipe + T_tail, and its parts
// (docs/spec/search-and-time.md §7).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/model.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "search/evaluator/triple_table.hpp"
#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"
#include "search/evaluator/zero_free_memo.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
TimeReport estimate_step_time(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s);
// What a stage's time owes to everything but the ZeRO stage and shard group: its layers' compute,
// TP/CP/EP/PP communication (the fields of `partial` they fill) and the parameters it holds.
struct StageCompute {
  StageTime partial;
  double P_d = 0, P_e = 0, units = 0;  // dense/shared and routed parameters per rank; FSDP units
  bool embedding = false, head = false;
};
struct ComputeSide {
  std::vector<StageCompute> stages;
  double model_flops = 0;               // F_model = 3·gb·F_seq (for MFU), the same for every strategy
  double floor = 0;                     // step_time_floor's value, the same for every (z, G)
  std::vector<StageTime> floor_stages;  // the stages' times without their ZeRO exposure (storage)
};

// The layer kinds' times read only tp, SP, CP (its algorithm and Ulysses degree), ep, etp, b and
// whether the schedule is DualPipeV (layer_time.cpp): kept in a table over the triple's values
// while the search walks it (flag 1: DualPipeV).
struct LayerTimes {
  std::array<LayerTime, 2> times{};    // dense, MoE
  std::array<RankParams, 2> params{};  // a layer's per-rank parameters (tp, ep, etp), dense, MoE
};
using LayerTimeTable = TripleTable<LayerTimes>;

// What the step time reads from the model and the run alone: made once per search (precompute)
// and handed to each thread's scratch, or made per estimate without one.
struct StepConstants {
  double model_flops = 0;  // F_model = 3·gb·F_seq (for MFU), the same for every strategy
};
StepConstants precompute_step_constants(const Model& model, const Run& run);

// Storage an estimate works in (the search keeps one per thread); setting `memo_context`
// (zero_free_memo.hpp) also reuses the compute side across (z, G).
struct StepTimeScratch {
  ComputeSide side;  // used when there is no memo

  std::uint64_t memo_context = 0;
  ZeroFreeMemo<ComputeSide> memo;
  LayerTimeTable layer_times;  // opened by the search for each triple it walks
  // The search's constants (set with memo_context), or null: made per estimate.
  const StepConstants* constants = nullptr;
};

// The same into `r` (its stage storage reused) with the plan of the strategy's layout already
// made (make_layout_plan of the same model, run and strategy): the search's allocation-free path.
void estimate_step_time_into(TimeReport& r, StepTimeScratch& scratch, const Model& model, const Run& run,
                             const Cluster& cluster, const Strategy& s, const LayoutPlan& plan);

// A floor of the step time of `s` that needs only its compute side (kept across ZeRO settings):
// the pipeline makespan of §7.8 over each stage's τ without its ZeRO/FSDP exposure, and no tail.
// Every part left out is ≥ 0 and the makespan rises with each τ_i (floating point included), so
// the floor is never above the step time. DualPipeV's makespan reads the slowest stage's own
// passes, which a smaller τ may change: 0 there.
double step_time_floor(StepTimeScratch& scratch, const Model& model, const Run& run, const Cluster& cluster,
                       const Strategy& s, const LayoutPlan& plan);

}  // namespace meshfit
