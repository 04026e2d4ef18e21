#include "search/evaluator/step_time_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "estimators/collectives.hpp"
#include "estimators/data_parallel_time.hpp"
#include "estimators/step_totals.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/model_states.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/pipeline_hops.hpp"
#include "estimators/pipeline_schedule.hpp"
#include "estimators/rank_layout.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit {

TimeReport estimate_step_time(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  TimeReport r;
  StepTimeScratch scratch;
  LayoutPlan plan;
  make_layout_plan(plan, m, make_layout(m, run, s), s.pp, s.vpp, s.recompute == Recompute::full);
  estimate_step_time_into(r, scratch, m, run, cluster, s, plan);
  return r;
}

namespace {

// The layer kinds' times and per-rank parameters (memory-model §4.9), from the triple's table when
// the walk has met s's values there already, else made (into `local` without a table).
const LayerTimes& layer_times_of(LayerTimeTable* table, std::optional<LayerTimes>& local, const Model& m,
                                 const Run& run, const Device& d, const Strategy& s) {
  return found_or_made(table, s, s.schedule == Schedule::dualpipev ? 1 : 0, local, [&](LayerTimes& entry) {
    entry.times[0] = layer_time(m, run, d, s, FfnKind::dense);
    entry.times[1] = m.is_moe() ? layer_time(m, run, d, s, FfnKind::moe) : entry.times[0];
    entry.params[0] = layer_rank_params(m, s, FfnKind::dense);
    entry.params[1] = m.is_moe() ? layer_rank_params(m, s, FfnKind::moe) : entry.params[0];
  });
}

// What every stage of one estimate reads: the kinds' times and parameters, the head's kernels,
// the PP hop and the embedding table per rank.
struct StageTerms {
  const Model& m;
  const Strategy& s;
  const LayoutPlan& plan;
  const LayerTimes& kinds;
  double logits_f = 0, eh_f = 0, p2p = 0, table = 0;
  LossTime loss{};  // the cross-entropy's HBM traffic (§7.3)
  // Without full recompute every body layer takes the strategy's mode; under it the fully
  // recomputed layers take full and the rest recompute_rest (§5.4).
  Recompute rest_mode = Recompute::none;
};

StageTerms stage_terms(const Model& m, const Run& run, const Device& d, const Strategy& s, const LayoutPlan& plan,
                       const LayerTimes& kinds) {
  const RunOptions& o = run.options;
  const KernelScales eta = kernel_scales(run, d, s);
  const double h = static_cast<double>(m.hidden);
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double n_tok = b * seq, shards = static_cast<double>(s.tp * s.cp);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  StageTerms t{m, s, plan, kinds};
  t.logits_f = kernel_time(d, eta.other, logits_flops(m, n_tok, v_pad) / shards);
  t.eh_f = kernel_time(d, eta.linear, mtp_projection_flops(m, n_tok) / shards);
  t.loss = loss_time(run, d, s, v_pad);
  t.p2p = pipeline_hop_time(m, run, d, s);  // PP hops (§7.5, §7.6)
  t.table = v_pad * h / static_cast<double>(s.tp);
  t.rest_mode = s.recompute == Recompute::full ? o.recompute_rest : s.recompute;
  return t;
}

// A stage's layers, ends and PP hops (§7.2–§7.5) and the parameters it holds per rank.
void stage_compute(StageCompute& sc, const StageTerms& t, std::int64_t i) {
  const Model& m = t.m;
  const PlannedStage& ps = t.plan.stages[static_cast<std::size_t>(i)];
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(t.s.tp);
  sc = StageCompute{};
  StageTime& st = sc.partial;
  st.stage = i;
  double tp_c = 0, cp_c = 0, ep_c = 0;
  // `n` layers of one kind in one mode: a stage's time is the sum of its layers' (§7.2–§7.5).
  auto add_layers = [&](std::size_t kind, Recompute mode, double n) {
    const LayerTime& lt = t.kinds.times[kind];
    const int k = static_cast<int>(mode);
    st.forward += n * lt.forward;
    st.backward += n * lt.backward;
    st.weight_grad += n * lt.weight_grad;
    st.recompute += n * lt.recompute[k];
    double tp_l = lt.tp + lt.tp_recompute[k], ep_l = lt.ep, cp_l = lt.cp;
    // Recompute repeats the forward communication of what it recomputes (§7.5).
    if (mode == Recompute::full) ep_l += lt.ep_forward;
    if (lt.recompute_repeats_cp[k]) cp_l += lt.cp_forward;
    tp_c += n * tp_l;
    cp_c += n * cp_l;
    ep_c += n * ep_l;
    st.ep_hidden += n * lt.ep_hidden;
    const RankParams& p = t.kinds.params[kind];
    sc.P_d += n * (p.non_expert + p.shared);
    sc.P_e += n * p.routed;
    sc.units += n;
  };
  for (std::size_t kind = 0; kind < 2; ++kind) {
    for (std::size_t full = 0; full < 2; ++full) {
      const std::int64_t n = ps.body_layers[kind][full];
      if (n > 0) add_layers(kind, full == 1 ? Recompute::full : t.rest_mode, static_cast<double>(n));
    }
  }
  if (ps.embedding) {
    sc.P_d += t.table + static_cast<double>(m.positions) * h;
    sc.units += 1;
  }
  if (ps.head) {
    // Logits: one forward kernel and two backward ones per loss, and the loss's own traffic; MTP
    // depths are body layers of the head's stage, with their eh_proj and their own logits (ruling 9).
    const double losses = static_cast<double>(1 + m.mtp_depths);
    st.forward += losses * (t.logits_f + t.loss.forward);
    st.backward += losses * (2 * t.logits_f + t.loss.backward);
    st.weight_grad += losses * t.logits_f;
    if (m.mtp_depths > 0) {
      const double depths = static_cast<double>(m.mtp_depths);
      add_layers(m.layer_ffn.back() == FfnKind::moe ? 1 : 0, t.s.recompute, depths);
      st.forward += depths * t.eh_f;
      st.backward += depths * 2 * t.eh_f;
      st.weight_grad += depths * t.eh_f;
      sc.P_d += depths * (static_cast<double>(mtp_extra_split(m)) / tp + static_cast<double>(mtp_extra_repl(m)));
    }
    sc.P_d += (m.tie && !t.plan.split_ends ? 0 : t.table) + static_cast<double>(m.norm_params());
    if ((m.tie || m.mtp_depths > 0) && t.plan.split_ends) sc.P_d += t.table;
    sc.units += 1;
  }
  st.comm_tp = tp_c;
  st.comm_cp = cp_c;
  st.comm_ep = ep_c;
  st.comm_pp = t.p2p;
  sc.embedding = ps.embedding;
  sc.head = ps.head;
}

// Everything of a stage's time that neither z nor G changes: its layers' compute, TP/CP/EP and PP
// communication, and the parameters it holds per rank (§7.2–§7.5); F_model is the caller's.
void compute_side(ComputeSide& side, LayerTimeTable* kinds_table, double model_flops, const Model& m, const Run& run,
                  const Device& d, const Strategy& s, const LayoutPlan& plan) {
  std::optional<LayerTimes> local;  // the kinds without a table (made only then)
  const StageTerms t = stage_terms(m, run, d, s, plan, layer_times_of(kinds_table, local, m, run, d, s));
  side.model_flops = model_flops;
  side.stages.resize(static_cast<std::size_t>(s.pp));
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const PlannedStage& ps = plan.stages[static_cast<std::size_t>(i)];
    StageCompute& sc = side.stages[static_cast<std::size_t>(i)];
    if (ps.twin != PlannedStage::kNoTwin) {  // the same layer counts and no end: the same figures
      sc = side.stages[ps.twin];
      sc.partial.stage = i;
    } else {
      stage_compute(sc, t, i);
    }
  }
  // step_time_floor (step_time_evaluator.hpp): the makespan over each τ_i without its ZeRO exposure (summed
  // as estimate_step_time_into sums τ_i, without its last term comm_zero ≥ 0), and no tail.
  side.floor = 0;
  if (s.schedule != Schedule::dualpipev) {
    std::vector<StageTime>& floor_stages = side.floor_stages;
    floor_stages.resize(side.stages.size());
    for (std::size_t i = 0; i < side.stages.size(); ++i) {
      StageTime& st = floor_stages[i];
      st = side.stages[i].partial;
      st.tau = st.forward + st.backward + st.recompute + st.comm_tp + st.comm_cp + st.comm_ep + st.comm_pp;
    }
    side.floor = pipeline_makespan(s, floor_stages);
  }
}

}  // namespace

StepConstants precompute_step_constants(const Model& m, const Run& run) {
  return StepConstants{3 * static_cast<double>(run.global_batch) * sequence_flops(m, static_cast<double>(run.seq))};
}

namespace {

const ComputeSide& side_of(StepTimeScratch& scratch, const Model& m, const Run& run, const Device& d, const Strategy& s,
                           const LayoutPlan& plan) {
  const StepConstants constants = scratch.constants ? *scratch.constants : precompute_step_constants(m, run);
  if (scratch.memo_context == 0) {
    compute_side(scratch.side, nullptr, constants.model_flops, m, run, d, s, plan);
    return scratch.side;
  }
  bool fresh = false;
  ComputeSide& kept = scratch.memo.find(scratch.memo_context, s, fresh);
  if (fresh) compute_side(kept, &scratch.layer_times, constants.model_flops, m, run, d, s, plan);
  return kept;
}

}  // namespace

double step_time_floor(StepTimeScratch& scratch, const Model& m, const Run& run, const Cluster& cluster,
                       const Strategy& s, const LayoutPlan& plan) {
  return side_of(scratch, m, run, cluster.device, s, plan).floor;
}

void estimate_step_time_into(TimeReport& r, StepTimeScratch& scratch, const Model& m, const Run& run,
                             const Cluster& cluster, const Strategy& s, const LayoutPlan& plan) {
  const Device& d = cluster.device;
  const ComputeSide* side = &side_of(scratch, m, run, d, s, plan);
  const DataParallelGroups groups = data_parallel_groups(m, run, d, s, plan.split_ends);

  std::vector<StageTime> stages = std::move(r.stages);
  r = TimeReport{};
  r.stages = std::move(stages);
  r.stages.resize(static_cast<std::size_t>(s.pp));
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const StageCompute& sc = side->stages[static_cast<std::size_t>(i)];
    StageTime& st = r.stages[static_cast<std::size_t>(i)];
    st = sc.partial;
    data_parallel_time(st, StageParams{sc.P_d, sc.P_e, sc.units, sc.embedding, sc.head}, groups, m, run, d, s);
  }

  step_from_stages(r, run, d, s, side->model_flops);
}

}  // namespace meshfit
