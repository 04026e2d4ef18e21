// The memory model: per-stage peak memory of one strategy (docs/spec/memory-model.md §1).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/layer_activations.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "search/evaluator/triple_table.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/model.hpp"
#include "estimators/model_states.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/zero_buffers.hpp"
#include "search/evaluator/zero_free_memo.hpp"

namespace meshfit {

// `s` must be valid (estimators/strategy_rules) with its derived fields filled. Pure.
MemoryReport estimate_memory(const Model& model, const Run& run, const Cluster& cluster, const Strategy& s,
                             double headroom_bytes = 0);

// A run of consecutive body layers of one kind and one recompute mode in a chunk: within it every
// layer keeps and works the same bytes, so the backward scan of §9.1 needs only its last layer.
// What a stage's memory owes to everything but the ZeRO stage and shard group: its layout, chunk
// activations and in-flight counts, and the transients that read neither (§7–§9). The rest — model
// states, the ZeRO/FSDP transients, Pg + Rg in the layer transient, totals — is added per (z, G).
struct StageActivations {
  StageMemory partial;  // the fields above filled; the others zero
  // (The model-state additions of the stage, replayed per (z, G), are the layout plan's.)
  using Part = StatePart;
  // §9.1's Tr_layer candidates X − K_after (before + Pg + Rg + Xsp, which depend on the kind only):
  // the stage's best per layer kind, the layer it is at and its place in the scan (for ties).
  std::array<double, 2> tr_base{}, seed_last{};
  std::array<std::int64_t, 2> tr_at{}, tr_order{};
  std::array<bool, 2> kind_present{};
  int seed_last_kind = -1;  // --rules sapp-nd: item 13's last layer (kind, base in seed_last[0])
  std::int64_t seed_last_at = -1;
  std::vector<std::array<double, 2>> chunk_tr_base;      // per chunk and kind (DualPipeV, §9.8)
  std::vector<std::array<std::int64_t, 2>> full_layers;  // fully recomputed layers per chunk and kind
  std::vector<double> full_kept;                         // K_1 of a full layer per chunk
  bool has_moe = false;
  int last_layer_kind = -1;           // the stage's last body layer (0 dense, 1 MoE), -1 with none
  std::vector<std::int64_t> vstages;  // work space: its chunks' virtual stages (§8.6)
};

// The kinds' activations and per-rank parameters read only tp, sp, cp (its algorithm and Ulysses
// degree, which the walk derives from the triple and the algorithm), ep, etp and b
// (activation_census, layer_activations, parameter_counts), so the search finds them again across
// pipeline layouts, schedules, ZeRO settings and recompute modes: a table over the triple's values.
struct KindFigures {
  std::array<KindActivation, 2> kinds{};  // dense, MoE
  std::array<RankParams, 2> params{};
};
using KindTable = TripleTable<KindFigures>;

// A layer kind's model states and ZeRO/FSDP buffers under a strategy's (z, G).
using KindStates = LayerStates;

// What the (z, G) side owes to neither the recompute mode (but whether it is full) nor the
// micro-batch size: the kinds' states and buffers and each stage's model states. The search visits
// the modes and sizes of one ZeRO setting in a row and keeps it across them.
struct StaticSide {
  std::uint64_t context = 0;  // 0: not filled
  Strategy key;               // the strategy with b, m and a non-full mode neutralised
  std::array<KindStates, 2> kinds{};
  std::vector<ModelStates> stages;          // replayed in the activation side's order
  std::vector<double> held;                 // FSDP2 root and last block kept gathered, bytes
  std::vector<double> deferred_elements;    // unsharded gradient elements deferred at once (ruling 10)
  std::vector<std::int64_t> communicators;  // n_comm per stage (§10.2)
  // Per stage, the b-free addends of its totals (finish_totals): kept with the rest so that an
  // estimate of the totals alone adds only what b changes.
  struct Totals {
    double stat = 0;        // static_total(): weights, grads, optimizer, gathered, FP8 cache
    double persistent = 0;  // persistent(): stat less the gathered parameters
    double step = 0;        // stat + the optimizer-step transient
    double deferred = 0;    // deferred gradient sync (ruling 10), when `defers`
    bool defers = false;
    double tr_fsdp = 0;  // when FSDP gathers per layer
    double tr_bucket = 0;
    double communicator_buffers = 0, ep_library = 0;
  };
  std::vector<Totals> totals;
  double static_floor = 0;  // the report's static_floor, the largest over the stages
  double host_peak = 0;     // the largest stage's offloaded states (§6.4), the report's host_peak
};

// The activation side of one strategy: the same for every (z, G).
struct ActivationSide {
  std::vector<StageActivations> stages;  // at least pp; the first pp are the strategy's
  std::array<RankParams, 2> params{};    // one layer's per-rank parameters, dense and MoE
  bool counts = false;                   // the stages' in-flight counts made (the search's totals read none)
};

// A chunk's figures that a twin chunk (same runs, layout_plan.hpp) copies instead of walking its
// runs: its kept bytes, its first largest Tr_layer base per kind (the run, counted from the
// chunk's first, and the candidate's place among the chunk's, −1: none of the kind), its largest
// attention transient, and the grad-clip seed's full-layer figures.
struct ChunkWalk {
  static constexpr double kNone = -std::numeric_limits<double>::infinity();
  double A = 0;
  std::array<double, 2> best{kNone, kNone};
  std::array<std::int64_t, 2> best_run{-1, -1}, best_offset{0, 0};
  double tr_attn = 0;
  std::array<std::int64_t, 2> full_layers{};
  double full_kept = 0;
};

// The interleaved 1F1B timelines' candidate states (in_flight.hpp) met by one scratch, made once
// per (pp, v, m) and found again without a lookup while consecutive estimates share them.
class InterleavedStateTable {
 public:
  // Stage `stage`'s states under `s`, or null where the schedule's counts are a closed form.
  const InterleavedStates* of(const Strategy& s, std::int64_t stage);

 private:
  using Key = std::array<std::int64_t, 3>;  // pp, v, interleaved_states_m
  std::map<Key, std::vector<InterleavedStates>> made_;
  Key last_key_{-1, -1, -1};
  const std::vector<InterleavedStates>* last_ = nullptr;
};

// Storage an estimate works in. A caller that estimates many strategies (the search) keeps one
// per thread with its MemoryReport, so that an estimate allocates nothing once warm; setting
// `memo_context` (zero_free_memo.hpp) also reuses the activation side across (z, G).
struct MemoryScratch {
  MemoryScratch() = default;
  MemoryScratch(const MemoryScratch&) = delete;  // `in_use` points into this scratch
  MemoryScratch& operator=(const MemoryScratch&) = delete;
  // The layout of the last strategy estimated. Two are in use, for full recompute and for the
  // other modes (the full-recompute layout also places the recomputed layers), each with the key
  // it was made from: the search alternates modes under the same pipeline, so neither is remade.
  const PipelineLayout& layout() const { return in_use[current]->layout; }
  // Makes (or finds) the layout of `s` and makes it the current one.
  const PipelineLayout& prepare_layout(const Model& model, const Run& run, const Strategy& s);
  // The current layout's activation plan (layout_plan.hpp) for `s`, made again only when the
  // layout or the model's layer kinds have changed.
  const LayoutPlan& prepare_plan(const Model& model, const Strategy& s);
  // prepare_layout, then prepare_plan: within a memo context, when the layout in use for s's
  // kind was made for the same pipeline fields and its plan stands, a few comparisons inline
  // (both are asked for about twice per estimate in a search).
  const LayoutPlan& layout_plan(const Model& model, const Run& run, const Strategy& s) {
    const std::size_t k = s.recompute == Recompute::full ? 1 : 0;
    const LayoutKey& key = layout_keys[k];
    if (memo_context != 0 && layout_context[k] == memo_context && stored_context == memo_context && key.layers >= 0 &&
        key.pp == s.pp && key.vpp == s.vpp && key.schedule == s.schedule && key.full == (k == 1) &&
        key.recompute_layers == (k == 1 ? s.recompute_layers : 0)) {
      const LayoutEntry& e = *in_use[k];
      if (!e.plan_stale && e.plan_context == memo_context) {
        current = k;
        return e.plan;
      }
    }
    prepare_layout(model, run, s);
    return prepare_plan(model, s);
  }
  struct LayoutEntry {
    PipelineLayout layout;
    LayoutPlan plan;
    bool plan_stale = true;          // the layout changed since the plan was made
    std::uint64_t plan_context = 0;  // the memo context the plan was last used in
  };
  std::array<LayoutKey, 2> layout_keys;
  std::array<std::uint64_t, 2> layout_context{};  // the memo context each layout key was last set in
  std::size_t current = 0;
  std::array<LayoutEntry, 2> own;  // the entries in use without a memo context
  std::array<LayoutEntry*, 2> in_use{&own[0], &own[1]};
  // Within one memo context (model and run fixed) every layout met, by what the strategy sets —
  // (pp, vpp, n_rc, full, schedule) — with its plan: a search returns to a pipeline many times
  // (under each sp, CP algorithm and (tp, cp)), and finds it here instead of remaking it.
  std::map<std::array<std::int64_t, 5>, LayoutEntry> stored;
  std::uint64_t stored_context = 0;
  void forget_stored();
  void switch_layout(const Model& model, const Run& run, const Strategy& s);
  bool walk_every_chunk = false;  // no twin chunks copied (layout_plan.hpp): the tests' reference
  ActivationSide side;            // used when there is no memo
  std::vector<ChunkWalk> walks;   // the walked chunks' figures, by chunk index (activation_side)
  InterleavedStateTable interleaved;
  std::uint64_t memo_context = 0;
  ZeroFreeMemo<ActivationSide> memo;
  StaticSide statics;
  KindTable kinds;                        // opened by the search for each triple it walks
  std::vector<StageMemory> spare_stages;  // report stages a smaller pp left, storage kept
};

// estimate_memory into `out`, reusing its storage and `scratch`'s. Without `stage_detail` (the
// search) only the totals are made: peak, peak_stage, fits, static_floor, and `out.stages` empty.
void estimate_memory_into(MemoryReport& out, MemoryScratch& scratch, const Model& model, const Run& run,
                          const Cluster& cluster, const Strategy& s, double headroom_bytes = 0,
                          bool stage_detail = true);

// True when, at fixed gb (m = gb/(dp·b)) and every other dimension of `s` fixed, the peak is
// non-decreasing in b (§15's property check, which search-and-time.md §3.2 prunes with). It fails
// under the seed's gradient-clipping special case (§9.9, §17.3 item 10) with fully recomputed
// layers: such a layer adds fwd + dpc while fwd + dpc > clip and clip + dpc otherwise, so where
// fwd (∝ b) crosses clip − dpc its contribution drops by dpc as b rises. And under deferred
// gradient sync with interleaved 1F1B (ruling 10): where m = gb/(dp·b) falls below 2·pp, a stage
// holds one chunk's deferred gradients instead of all its chunks'.
bool peak_rises_with_micro_batch(const Run& run, const Strategy& s);

}  // namespace meshfit
