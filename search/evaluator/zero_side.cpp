// The memory evaluator's (z, G) side and totals: per ZeRO stage and shard group, each stage's
// model states (§6), the ZeRO/FSDP parts of its transients (§9.1, §9.4, §9.5), the grad-clip copy
// (§9.9) and the totals (§11), from the activation side (activation_side.cpp). The terms are
// estimators/' (zero_buffers, grad_clip, backward_transients, overheads); what is the evaluator's
// own is keeping the b-free parts (StaticSide) across recompute modes and micro-batch sizes, the
// twin stages of the layout plan, and the totals-only path the search takes.
#include <algorithm>
#include <array>

#include "estimators/backward_transients.hpp"
#include "estimators/grad_clip.hpp"
#include "estimators/host_memory.hpp"
#include "estimators/model_states.hpp"
#include "estimators/overheads.hpp"
#include "estimators/sapp_nd_stage.hpp"
#include "estimators/sapp_nd_tables.hpp"
#include "estimators/seed_conventions.hpp"
#include "estimators/tp_overlap_buffers.hpp"
#include "estimators/zero_buffers.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "search/evaluator/memory_sides.hpp"

namespace meshfit::evaluator_detail {

namespace {

using Part = StageActivations::Part;

// What the activation side put in a stage (its `partial`) that the totals read, without the
// per-chunk vectors (finish reads those from the partial itself), and the conditional fields at
// their defaults: a stage totalled without detail. The search's memory estimates go this way;
// a test requires the same peak, stage, fit and floor as with detail.
void copy_totals(StageMemory& st, const StageMemory& p) {
  st.stage = p.stage;
  st.layers = p.layers;
  st.full_recompute = p.full_recompute;
  st.embedding = p.embedding;
  st.head = p.head;
  st.mtp_depths = p.mtp_depths;
  st.activations = p.activations;
  st.tr_attn = p.tr_attn;
  st.tr_logits = p.tr_logits;
  st.tr_cp = p.tr_cp;
  st.tr_ep = p.tr_ep;
  st.deferred_grads = p.deferred_grads;
  st.pipeline_buffers = p.pipeline_buffers;
  st.tr_fsdp = p.tr_fsdp;
  st.tr_dpv = p.tr_dpv;
  st.tr_layer_at = p.tr_layer_at;
}

// The key a StaticSide is kept under: `s` without its micro-batch size, micro-batch count (but
// for whether it holds deferred gradients a chunk at a time) and recompute mode. No part of the (z, G) side reads the
// mode; it reads the layout plan's model-state parts, which full recompute splits where a chunk's fully recomputed
// layers end — except when every layer is (n_rc unset, no per-stage counts), so then all modes share one key.
Strategy static_key(const Strategy& s, const Run& run) {
  Strategy k = s;
  k.micro_batch = 1;
  // m only says whether the deferred gradients are held a chunk at a time (defers_chunk_by_chunk).
  k.num_microbatches = defers_chunk_by_chunk(run, s) ? 0 : 1;
  const bool every_layer = k.recompute_layers == 0 && run.options.full_layers_per_vstage.empty();
  if (k.recompute != Recompute::full || every_layer) {
    k.recompute = Recompute::none;
    k.recompute_layers = 0;
  }
  return k;
}

// finish without the report's stages (the search): peak, peak stage, fit and static floor from
// the b-free addends kept in `statics` and what the activation side holds for this b — the
// detailed loop's operations in its order, so the same figures (a test compares them).
void finish_totals(MemoryReport& report, const ActivationSide& side, const StaticSide& statics, const Device& dev,
                   const Strategy& s, bool gather_per_layer, double x_sp, double tp_overlap, double fit_factor) {
  report.peak = 0;
  report.peak_stage = 0;
  const std::array<double, 2> pg{statics.kinds[0].gathered_params, statics.kinds[1].gathered_params};
  const std::array<double, 2> rg{statics.kinds[0].reduce_buffers, statics.kinds[1].reduce_buffers};
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const StageActivations& a = side.stages[static_cast<std::size_t>(i)];
    const StageMemory& p = a.partial;
    const StaticSide::Totals& t = statics.totals[static_cast<std::size_t>(i)];
    const double tr_layer = largest_layer_candidate(a.tr_base, a.tr_order, pg, rg, x_sp).transient;
    const double transient = largest_transient(tr_layer, p.tr_attn, p.tr_logits,
                                               gather_per_layer ? t.tr_fsdp : p.tr_fsdp, t.tr_bucket, p.tr_cp, p.tr_ep);
    const double backward =
        t.stat + (t.defers ? t.deferred : p.deferred_grads) + p.pipeline_buffers + p.activations + transient;
    const double step = t.step + p.pipeline_buffers;
    const double outside = dev.overhead_context + t.communicator_buffers + dev.overhead_workspaces + t.ep_library +
                           dev.overhead_fixed + tp_overlap;
    const double device = device_total(std::max(backward, step), t.persistent, outside, dev, report.budget);
    if (i == 0 || device > report.peak) {
      report.peak = device;
      report.peak_stage = i;
    }
  }
  report.static_floor = statics.static_floor;
  report.fits = report.peak * fit_factor <= report.budget;
  apply_host_budget(report, statics.host_peak, dev, s);
}

// The estimate: the activation side, then per (z, G) the model states, the ZeRO/FSDP parts of the
// transients and the totals (§6, §9, §11). `statics` holds the (z, G) side's b-free parts, reused

// What the (z, G) side reads of the strategy, made once per estimate.
struct ZeroTerms {
  const Model& m;
  const Run& run;
  const Device& dev;
  const Strategy& s;
  bool seed_counts = false, last_layer_only = false;
  bool gather_per_layer = false, keep_gathered = false, split_ends = false;
  double x_sp = 0;  // Xsp of §9.1
  ZeroDivisors z{};
  EndParams ends{};  // §4.7, §4.8, §5.3
};

ZeroTerms zero_terms(const Model& m, const Run& run, const Device& dev, const Strategy& s,
                     const PipelineLayout& layout) {
  ZeroTerms t{m, run, dev, s};
  const RulesProfile& rules = rules_profile(run);
  t.seed_counts = rules.layer_counts == LayerCounts::seed_counts;
  t.last_layer_only = rules.layer_transient == LayerTransientRule::stage_last_layer;
  const bool reshard = reshards_after_forward(run, s);
  t.gather_per_layer = s.zero == 3 && reshard;
  t.keep_gathered = s.zero == 3 && !reshard;  // §6.1
  t.split_ends = layout.vstages.front().stage != layout.head_stage;
  t.x_sp = sp_gathered_input(m, run, s);
  t.z = zero_divisors(s, run);
  t.ends = end_params(m, run, s);
  return t;
}

// Each stage's model states, communicators and FSDP2's kept-gathered parameters, from the layout
// plan's model-state parts (a twin stage copies its twin's).
void stage_states(StaticSide& statics, const ActivationSide& side, const LayoutPlan& plan, const ZeroTerms& t) {
  const Model& m = t.m;
  const Run& run = t.run;
  // Each end part's states, the same on whichever stage holds it (index: Part's value).
  std::array<ModelStates, 6> end_states{};
  end_states[static_cast<std::size_t>(Part::embedding)] =
      model_states(t.ends.embedding, t.z, run, true, t.keep_gathered);
  end_states[static_cast<std::size_t>(Part::vocab)] = model_states(t.ends.vocab, t.z, run, true, t.keep_gathered);
  end_states[static_cast<std::size_t>(Part::final_norm)] =
      model_states(t.ends.final_norm, t.z, run, false, t.keep_gathered);
  end_states[static_cast<std::size_t>(Part::mtp_extra)] =
      model_states(t.ends.mtp_extra, t.z, run, false, t.keep_gathered);
  if (seed_rule(run, SeedConvention::table_shard)) {  // §17.5.4
    const sapp_nd::TableStates seed = sapp_nd::table_states(m, run, t.s);
    end_states[static_cast<std::size_t>(Part::embedding)] = seed.embedding;
    end_states[static_cast<std::size_t>(Part::vocab)] = seed.output;
    end_states[static_cast<std::size_t>(Part::mtp_extra)] = seed.mtp_extra;
  }
  const auto pp = static_cast<std::size_t>(t.s.pp);
  statics.stages.assign(pp, ModelStates{});
  statics.held.assign(pp, 0.0);
  statics.deferred_elements.assign(pp, 0.0);
  const bool by_chunk = defers_chunk_by_chunk(run, t.s);
  auto part_elements = [&](Part part, double times) {
    switch (part) {
      case Part::dense_layer: return times * statics.kinds[0].states.unsharded_elements;
      case Part::moe_layer: return times * statics.kinds[1].states.unsharded_elements;
      default: return end_states[static_cast<std::size_t>(part)].unsharded_elements;
    }
  };
  statics.communicators.assign(pp, 0);
  for (std::size_t i = 0; i < pp; ++i) {
    const PlannedStage& ps = plan.stages[i];
    if (ps.twin != PlannedStage::kNoTwin) {  // the same parts, kinds and ends: the same figures
      statics.stages[i] = statics.stages[ps.twin];
      statics.held[i] = statics.held[ps.twin];
      statics.deferred_elements[i] = statics.deferred_elements[ps.twin];
      statics.communicators[i] = statics.communicators[ps.twin];
      continue;
    }
    const StageActivations& a = side.stages[i];
    const StageGroups groups{a.has_moe,
                             (m.tie || m.mtp_depths > 0) && t.split_ends && (a.partial.embedding || a.partial.head)};
    statics.communicators[i] = communicator_count(t.s, m.is_moe(), groups);
    ModelStates& states = statics.stages[i];
    const auto parts_begin = plan.parts.begin() + ps.parts_begin, parts_end = plan.parts.begin() + ps.parts_end;
    for (auto it = parts_begin; it != parts_end; ++it) {
      const auto& [part, times] = *it;
      switch (part) {
        case Part::dense_layer: states.add(statics.kinds[0].states, times); break;
        case Part::moe_layer: states.add(statics.kinds[1].states, times); break;
        default: states += end_states[static_cast<std::size_t>(part)];
      }
    }
    const bool root_held = run.profile.fsdp_root_and_last_block_unsharded;
    if (t.gather_per_layer && (root_held || run.profile.fsdp_output_group_unsharded)) {
      // FSDP2 never reshards the root module after forward (its backward starts at once), and
      // torchtitan leaves the last block unsharded for the same reason: the stage's tables,
      // final norm and last body layer stay gathered from the forward through the backward.
      // torchtitan since pytorch/torchtitan#1094 wraps the embedding alone (resharded) and keeps
      // only its [norm, output] group gathered, a tied table with them.
      double held =
          root_held && a.last_layer_kind >= 0 ? side.params[static_cast<std::size_t>(a.last_layer_kind)].total() : 0;
      const bool tied_with_head = m.tie && a.partial.head && !t.split_ends;
      for (auto it = parts_begin; it != parts_end; ++it) {
        const Part part = it->first;
        if (part == Part::embedding && (root_held || tied_with_head)) held += t.ends.embedding.total();
        if (part == Part::vocab) held += t.ends.vocab.total();
        if (part == Part::final_norm) held += t.ends.final_norm.total();
      }
      statics.held[i] = run.precision.beta_gather * held;
    }
    // Ruling 10's deferred gradients: the stage's, or its largest chunk's (defers_chunk_by_chunk).
    statics.deferred_elements[i] = states.unsharded_elements;
    if (by_chunk) {
      double largest = 0;
      for (std::int64_t c = 0; c < t.s.vpp; ++c) {
        const PlannedChunk& pc = plan.chunk(static_cast<std::int64_t>(i), c);
        double elements = 0;
        for (std::uint32_t k = pc.parts_begin; k < pc.parts_end; ++k) {
          elements += part_elements(plan.parts[k].first, plan.parts[k].second);
        }
        largest = std::max(largest, elements);
      }
      statics.deferred_elements[i] = largest;
    }
  }
}

// The largest Pg and Rg over the layer kinds a stage holds.
std::array<double, 2> largest_buffers(const StaticSide& statics, const StageActivations& a) {
  double max_pg = 0, max_rg = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    if (!a.kind_present[k]) continue;
    max_pg = std::max(max_pg, statics.kinds[k].gathered_params);
    max_rg = std::max(max_rg, statics.kinds[k].reduce_buffers);
  }
  return {max_pg, max_rg};
}

// The b-free addends of each stage's totals, in total_stage's own expressions and order.
void static_totals(StaticSide& statics, const ActivationSide& side, const LayoutPlan& plan, const ZeroTerms& t) {
  const Device& dev = t.dev;
  statics.totals.assign(statics.stages.size(), StaticSide::Totals{});
  statics.static_floor = 0;
  statics.host_peak = 0;
  for (const ModelStates& states : statics.stages) statics.host_peak = std::max(statics.host_peak, states.host);
  const bool defers = defers_grad_sync(t.run, t.s);
  for (std::size_t i = 0; i < statics.stages.size(); ++i) {
    if (plan.stages[i].twin != PlannedStage::kNoTwin) {
      statics.totals[i] = statics.totals[plan.stages[i].twin];
      continue;
    }
    const StageActivations& a = side.stages[i];
    const ModelStates& states = statics.stages[i];
    StaticSide::Totals& tot = statics.totals[i];
    StageMemory st;
    st.weights = states.weights;
    st.grads = states.grads;
    st.optimizer = states.optimizer;
    st.gathered = states.gathered + statics.held[i];
    st.fp8_cache = states.fp8_cache;
    tot.stat = st.static_total();
    tot.persistent = st.persistent();
    tot.step = tot.stat + optimizer_step_transient(states, t.s, t.run);
    tot.defers = defers;
    if (defers) tot.deferred = deferred_grad_bytes(statics.deferred_elements[i], t.run);
    const auto [max_pg, max_rg] = largest_buffers(statics, a);
    if (t.gather_per_layer) {
      tot.tr_fsdp = fsdp_gather_transient(max_pg, a.partial.embedding, a.partial.head, t.m.tie, t.split_ends,
                                          t.ends.table, t.run);
    }
    tot.tr_bucket = grad_bucket_transient(max_rg, t.s, t.run);
    tot.communicator_buffers = static_cast<double>(statics.communicators[i]) * dev.overhead_per_communicator;
    tot.ep_library = a.has_moe ? dev.overhead_ep_library : 0;
    statics.static_floor =
        std::max(statics.static_floor, tot.stat + least_reserve_fraction(dev) * (tot.stat - tot.persistent) +
                                           dev.overhead_context + tot.communicator_buffers + dev.overhead_workspaces +
                                           tot.ep_library + dev.overhead_fixed);
  }
}

// The (z, G) side's b-free parts for the strategy's key: the layer kinds' states and buffers,
// each stage's model states and its totals' addends.
void fill_statics(StaticSide& statics, const ActivationSide& side, const LayoutPlan& plan, const ZeroTerms& t) {
  statics.kinds[0] = layer_states(t.m, t.run, t.s, FfnKind::dense, side.params[0], t.z);
  statics.kinds[1] = t.m.is_moe() ? layer_states(t.m, t.run, t.s, FfnKind::moe, side.params[1], t.z) : statics.kinds[0];
  stage_states(statics, side, plan, t);
  static_totals(statics, side, plan, t);
}

// §9.9: the gradient-clipping copy each fully recomputed layer adds to the stage's activations.
double grad_clip_total(const StageActivations& a, const StaticSide& statics, const ActivationSide& side,
                       const ZeroTerms& t) {
  double added = 0;
  for (std::size_t c = 0; c < a.full_layers.size(); ++c) {
    const double n = static_cast<double>(a.partial.chunk_inflight[c]);
    for (std::size_t kind_index = 0; kind_index < 2; ++kind_index) {
      const std::int64_t count = a.full_layers[c][kind_index];
      if (count == 0) continue;
      // A full layer keeps the same input whatever its kind (its K_1, or item 9's).
      const double fwd = n * a.full_kept[c];
      if (t.seed_counts) {
        // Item 10: the seed's own copy and DP comm (elements, as the seed counts them).
        const KindStates& k = statics.kinds[kind_index];
        added += static_cast<double>(count) * grad_clip_addition(fwd, k.clip, k.dp_comm);
      } else {
        const RankParams& p = side.params[kind_index == 1 && t.m.is_moe() ? 1 : 0];
        added += static_cast<double>(count) *
                 grad_clip_addition(fwd, grad_clip_copy(p, t.z, t.run), grad_clip_dp_comm(p, t.s, t.run));
      }
    }
  }
  return added;
}

// Stage i in full: its model states, transients and totals (§6, §9, §11) on top of what the
// activation side put in `st`.
void total_stage(StageMemory& st, const StageActivations& a, const StaticSide& statics, const ActivationSide& side,
                 const ZeroTerms& t, std::size_t i) {
  const Strategy& s = t.s;
  const Run& run = t.run;
  const std::array<double, 2> pg{statics.kinds[0].gathered_params, statics.kinds[1].gathered_params};
  const std::array<double, 2> rg{statics.kinds[0].reduce_buffers, statics.kinds[1].reduce_buffers};
  const ModelStates& states = statics.stages[i];
  st.weights = states.weights;
  st.grads = states.grads;
  st.grads_built_in_backward = grads_built_in_backward(run, s);
  st.optimizer = states.optimizer;
  st.optimizer_moments = optimizer_moments(states, run);
  st.gathered = states.gathered + statics.held[i];
  st.fp8_cache = states.fp8_cache;
  // Ruling 10: with deferred gradient sync the stage holds every gradient unsharded, in the
  // reduce dtype (β_gcomm), from its first backward to the last reduce-scatter of the step.
  if (defers_grad_sync(run, s)) st.deferred_grads = deferred_grad_bytes(statics.deferred_elements[i], run);

  // §9.1's largest layer candidate: the better kind (the first met in the scan on a tie).
  double tr_layer = 0;
  if (t.last_layer_only) {
    if (a.seed_last_kind >= 0) {
      const auto k = static_cast<std::size_t>(a.seed_last_kind);
      tr_layer = layer_transient(a.seed_last[0], pg[k], rg[k], t.x_sp);
      st.tr_layer_at = a.seed_last_at;
    }
  } else {
    const LayerCandidate best = largest_layer_candidate(a.tr_base, a.tr_order, pg, rg, t.x_sp);
    tr_layer = best.transient;
    if (best.kind >= 0) st.tr_layer_at = a.tr_at[static_cast<std::size_t>(best.kind)];
  }
  const auto [max_pg, max_rg] = largest_buffers(statics, a);
  if (grad_clip_adjusts(run)) st.activations += grad_clip_total(a, statics, side, t);

  // §9: one transient on top of the in-flight activations, the largest candidate.
  st.tr_layer = tr_layer;
  if (t.gather_per_layer) {
    st.tr_fsdp = fsdp_gather_transient(max_pg, st.embedding, st.head, t.m.tie, t.split_ends, t.ends.table, run);
  }
  st.tr_bucket = grad_bucket_transient(max_rg, s, run);
  double layer_candidate = st.tr_layer;
  if (dualpipev_overlap(s)) {  // §9.8
    const std::array<double, 2> chunk_layer{
        largest_layer_candidate(a.chunk_tr_base[0], {0, 0}, pg, rg, t.x_sp).transient,
        largest_layer_candidate(a.chunk_tr_base[1], {0, 0}, pg, rg, t.x_sp).transient};
    st.tr_dpv = dualpipev_transient({a.partial.chunk_bytes[0], a.partial.chunk_bytes[1]}, chunk_layer);
    layer_candidate = st.tr_dpv;
  }
  st.transient =
      largest_transient(layer_candidate, st.tr_attn, st.tr_logits, st.tr_fsdp, st.tr_bucket, st.tr_cp, st.tr_ep);
  // §9.9: the optimizer-step phase.
  st.step_transient = optimizer_step_transient(states, s, run);
  // §11: totals.
  st.communicators = statics.communicators[i];
}

// The report holds exactly `pp` stages; those it no longer needs are kept in `spare` with their
// vectors' storage, for a later larger pp (no allocation once warm).
void size_stages(MemoryReport& report, std::vector<StageMemory>& spare, std::size_t pp) {
  while (report.stages.size() > pp) {
    spare.push_back(std::move(report.stages.back()));
    report.stages.pop_back();
  }
  while (report.stages.size() < pp) {
    if (spare.empty()) {
      report.stages.emplace_back();
    } else {
      report.stages.push_back(std::move(spare.back()));
      spare.pop_back();
    }
  }
}

}  // namespace

void finish(MemoryReport& report, std::vector<StageMemory>& spare, bool detail, const ActivationSide& side,
            StaticSide& statics, std::uint64_t context, const Model& m, const Run& run, const Device& dev,
            const Strategy& s, const PipelineLayout& layout, const LayoutPlan& plan, double headroom_bytes) {
  const Strategy key = static_key(s, run);
  const bool fresh_statics = context == 0 || statics.context != context || !(statics.key == key);
  report.capacity = dev.capacity;
  report.budget = dev.capacity - headroom_bytes;
  // Without detail, under the standard profile (finish_totals prices its variants only) and
  // without the grad-clip copy or DualPipeV's overlap (which read per-chunk figures), only the
  // totals are made.
  const bool totals_only =
      !detail && standard_profile(rules_profile(run)) && !grad_clip_adjusts(run) && !dualpipev_overlap(s);
  if (totals_only && !fresh_statics) {  // the search's most frequent estimate: nothing else is made
    size_stages(report, spare, 0);
    const bool gather_per_layer = s.zero == 3 && reshards_after_forward(run, s);
    finish_totals(report, side, statics, dev, s, gather_per_layer, sp_gathered_input(m, run, s),
                  tp_overlap_buffer_bytes(m, run, s), run.options.fit_factor_for(s.recompute));
    return;
  }
  const ZeroTerms t = zero_terms(m, run, dev, s, layout);
  if (fresh_statics) {
    statics.context = context;
    statics.key = key;
    fill_statics(statics, side, plan, t);
  }
  size_stages(report, spare, detail ? static_cast<std::size_t>(s.pp) : 0);
  const double tp_overlap = tp_overlap_buffer_bytes(m, run, s);  // the same on every stage
  if (totals_only) {
    finish_totals(report, side, statics, dev, s, t.gather_per_layer, t.x_sp, tp_overlap,
                  run.options.fit_factor_for(s.recompute));
    return;
  }
  report.peak = 0;
  report.peak_stage = 0;
  report.static_floor = 0;
  StageMemory lean;  // the stage being totalled without detail (its vectors stay empty)
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const StageActivations& a = side.stages[iu];
    StageMemory& st = detail ? report.stages[iu] : lean;
    if (detail) {
      st = a.partial;
    } else {
      copy_totals(st, a.partial);
    }
    total_stage(st, a, statics, side, t, iu);
    sapp_nd::apply_seed_stage(st, m, run, s, layout, a.partial.chunk_inflight);  // §17.5 (sapp-nd only)
    st.host = statics.stages[iu].host;
    st.tp_overlap_buffers = tp_overlap;
    report.static_floor = std::max(report.static_floor, stage_totals(st, dev, a.has_moe, report.budget));
    if (i == 0 || st.device > report.peak) {
      report.peak = st.device;
      report.peak_stage = i;
    }
  }
  report.fits = report.peak * run.options.fit_factor_for(s.recompute) <= report.budget;
  apply_host_budget(report, statics.host_peak, dev, s);
}

}  // namespace meshfit::evaluator_detail
