#include "search/evaluator/memory_evaluator.hpp"

#include <optional>

#include "estimators/grad_clip.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/model_states.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/rules_profile.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "search/evaluator/memory_sides.hpp"

namespace meshfit {

using evaluator_detail::activation_side;
using evaluator_detail::dualpipev_overlap;
using evaluator_detail::finish;
using evaluator_detail::standard_profile;

const InterleavedStates* InterleavedStateTable::of(const Strategy& s, std::int64_t stage) {
  if (s.pp == 1 || s.schedule != Schedule::interleaved_1f1b) return nullptr;
  const Key key{s.pp, s.vpp, interleaved_states_m(s.pp, s.vpp, s.num_microbatches)};
  if (key != last_key_ || !last_) {
    auto it = made_.find(key);
    if (it == made_.end()) it = made_.emplace(key, interleaved_states(s.pp, s.vpp, s.num_microbatches)).first;
    last_key_ = key;
    last_ = &it->second;
  }
  return &(*last_)[static_cast<std::size_t>(stage)];
}

bool peak_rises_with_micro_batch(const Run& run, const Strategy& s) {
  if (grad_clip_adjusts(run) && s.recompute == Recompute::full) return false;
  // Deferred gradients held a chunk at a time once m < 2·pp (defers_chunk_by_chunk): as b rises
  // m falls, and below 2·pp the stage holds one chunk's gradients instead of all.
  return !(defers_grad_sync(run, s) && backwards_grouped_by_chunk(s));
}

const PipelineLayout& MemoryScratch::prepare_layout(const Model& m, const Run& run, const Strategy& s) {
  current = s.recompute == Recompute::full ? 1 : 0;
  if (memo_context != 0 && stored_context != memo_context) forget_stored();
  // Within one memo context the model and run stay the same (zero_free_memo.hpp).
  const bool same_inputs = memo_context != 0 && layout_context[current] == memo_context;
  layout_context[current] = memo_context;
  if (update_layout_key(layout_keys[current], m, run, s, same_inputs)) switch_layout(m, run, s);
  return in_use[current]->layout;
}

// Another model or run: the layouts stored are not its, and neither entry in use stays.
void MemoryScratch::forget_stored() {
  stored.clear();
  stored_context = memo_context;
  for (std::size_t k = 0; k < 2; ++k) {
    layout_keys[k] = LayoutKey{};
    in_use[k] = &own[k];
  }
}

// The current layout's key has changed: its entry found among those stored, or made.
void MemoryScratch::switch_layout(const Model& m, const Run& run, const Strategy& s) {
  if (memo_context != 0) {
    const bool full = current == 1;
    const auto [it, fresh] = stored.try_emplace(
        {s.pp, s.vpp, full ? s.recompute_layers : 0, full ? 1 : 0, static_cast<std::int64_t>(s.schedule)});
    in_use[current] = &it->second;
    if (!fresh) return;
  } else {
    in_use[current] = &own[current];
  }
  make_layout_into(in_use[current]->layout, m, run, s);
  in_use[current]->plan_stale = true;  // the plan of the previous layout
}

const LayoutPlan& MemoryScratch::prepare_plan(const Model& m, const Strategy& s) {
  LayoutEntry& entry = *in_use[current];
  // Within one memo context the model stays the same (its owner changes the token otherwise), so
  // only a plan made outside it compares the model's layer kinds.
  const bool same_model = memo_context != 0 && entry.plan_context == memo_context;
  if (entry.plan_stale || (!same_model && !entry.plan.made_for(m))) {
    make_layout_plan(entry.plan, m, entry.layout, s.pp, s.vpp, s.recompute == Recompute::full, !walk_every_chunk);
    entry.plan_stale = false;
  }
  entry.plan_context = memo_context;
  return entry.plan;
}

MemoryReport estimate_memory(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s,
                             double headroom_bytes) {
  MemoryReport report;
  MemoryScratch scratch;
  estimate_memory_into(report, scratch, m, run, cluster, s, headroom_bytes);
  return report;
}

void estimate_memory_into(MemoryReport& report, MemoryScratch& scratch, const Model& m, const Run& run,
                          const Cluster& cluster, const Strategy& s, double headroom_bytes, bool stage_detail) {
  const RulesProfile& rules = rules_profile(run);
  std::optional<Device> adjusted;  // the profile's own overheads, when it has them (no copy otherwise)
  if (rules.device) adjusted = rules.device(cluster.device);
  const Device& dev = adjusted ? *adjusted : cluster.device;
  // The side and the (z, G) side read the same plan: that of the strategy's layout, which is the
  // layout of every strategy a memo entry serves (the memo's node and mode fix it).
  const LayoutPlan& plan = scratch.layout_plan(m, run, s);
  // The reuse across strategies is written for the standard profile's variants: under another,
  // every estimate is made afresh.
  const bool standard = standard_profile(rules);
  const std::uint64_t context = standard ? scratch.memo_context : 0;
  // Only what finish_totals adds up is wanted without stage detail (finish's totals_only).
  const bool counts = stage_detail || !standard || grad_clip_adjusts(run) || dualpipev_overlap(s);
  if (context == 0) {
    activation_side(scratch.side, scratch.walks, scratch.interleaved, plan, nullptr, m, run, dev, s, counts);
    finish(report, scratch.spare_stages, stage_detail, scratch.side, scratch.statics, 0, m, run, dev, s,
           scratch.layout(), plan, headroom_bytes);
    return;
  }
  bool fresh = false;
  ActivationSide& side = scratch.memo.find(context, s, fresh);
  // A side kept without counts is made again when they are wanted (the same figures, and them).
  if (fresh || (counts && !side.counts)) {
    activation_side(side, scratch.walks, scratch.interleaved, plan, &scratch.kinds, m, run, dev, s, counts);
  }
  finish(report, scratch.spare_stages, stage_detail, side, scratch.statics, context, m, run, dev, s, scratch.layout(),
         plan, headroom_bytes);
}

}  // namespace meshfit
