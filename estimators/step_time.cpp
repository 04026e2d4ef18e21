#include "estimators/step_time.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "estimators/collectives.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/model_states.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/pipeline_schedule.hpp"
#include "estimators/rank_layout.hpp"
#include "estimators/slot_hash.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit {

namespace {

// β_step: HBM bytes one optimizer step moves per locally updated parameter (§7.9).
double step_bytes(const Run& run) { return run.optimizer == Optimizer::sgd_momentum ? 26 : 38; }

// max(T − window, T/n): what a reduction or gather overlapped with a window leaves exposed,
// never below its last piece (§7.6).
double exposed(double t, double window, double pieces) {
  if (t <= 0) return 0;
  return std::max(t - window, t / std::max(1.0, pieces));
}

}  // namespace

TimeReport estimate_step_time(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  TimeReport r;
  StepTimeScratch scratch;
  LayoutPlan plan;
  make_layout_plan(plan, m, make_layout(m, run, s), s.pp, s.vpp, s.recompute == Recompute::full);
  estimate_step_time_into(r, scratch, m, run, cluster, s, plan);
  return r;
}

namespace {

// Everything of a stage's time that neither z nor G changes: its layers' compute, TP/CP/EP and PP
// communication, and the parameters it holds per rank (§7.2–§7.5).
void compute_side(ComputeSide& side, LayerTimeCache* cache, std::uint64_t context, const Model& m, const Run& run,
                  const Device& d, const Strategy& s, const LayoutPlan& plan) {
  const RunOptions& o = run.options;
  const KernelScales eta = kernel_scales(run, s);
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(s.tp);
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double n_tok = b * seq, shards = static_cast<double>(s.tp * s.cp);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));

  // The kinds' times, from the cache when this search (context) has met their key.
  const std::array<std::int64_t, 9> key{s.tp, s.sigma(), s.cp, static_cast<std::int64_t>(s.cp_algo), s.cp_u, s.ep, s.etp,
                                        s.micro_batch, s.schedule == Schedule::dualpipev ? 1 : 0};
  std::optional<LayerTimeCache::Entry> local;  // without a cache (made only then)
  LayerTimeCache::Entry* entry = nullptr;
  if (cache && context != 0) {
    if (cache->slots.empty()) cache->slots.resize(kTableSlots);
    entry = &cache->slots[slot_of(key)];
  } else {
    entry = &local.emplace();
  }
  if (local || entry->context != context || !same_key(entry->key, key)) {
    entry->context = context;
    entry->key = key;
    entry->times[0] = layer_time(m, run, d, s, FfnKind::dense);
    entry->times[1] = m.is_moe() ? layer_time(m, run, d, s, FfnKind::moe) : entry->times[0];
    // Per-rank parameter counts of a layer (memory-model §4.9).
    const std::int64_t kv_counted = m.attention == AttentionKind::gqa ? std::max(m.kv_heads, s.tp) : m.kv_heads;
    entry->params[0] = rank_params(layer_params(m, FfnKind::dense, kv_counted), s);
    entry->params[1] = m.is_moe() ? rank_params(layer_params(m, FfnKind::moe, kv_counted), s) : entry->params[0];
  }
  const LayerTime& dense = entry->times[0];
  const LayerTime& moe = entry->times[1];
  const double logits_f = kernel_time(d, eta.other, logits_flops(m, n_tok, v_pad) / shards);
  const double eh_f = kernel_time(d, eta.linear, mtp_projection_flops(m, n_tok) / shards);

  // PP hops (§7.5): inside a node only if the whole pipeline group is.
  const std::int64_t world = s.world();
  const bool pp_inside = world <= d.devices_per_node && d.devices_per_node % world == 0;
  const double S_pp = b * (seq / static_cast<double>(s.cp)) * h * o.beta_a / static_cast<double>(s.sigma());
  // §7.6: hidden with pp_overlap, and under DualPipeV's pairing unless dualpipe_overlap is off.
  const bool hidden = o.pp_overlap || (s.schedule == Schedule::dualpipev && o.dualpipe_overlap);
  const double p2p = s.pp > 1 && !hidden ? 2 * static_cast<double>(s.vpp) * point_to_point(d, pp_inside, S_pp) : 0;

  const RankParams& dense_p = entry->params[0];
  const RankParams& moe_p = entry->params[1];
  const double table = v_pad * h / tp;

  if (!cache || context == 0 || cache->flops_context != context) {
    side.model_flops = 3 * static_cast<double>(run.global_batch) * sequence_flops(m, seq);
    if (cache && context != 0) {
      cache->flops_context = context;
      cache->model_flops = side.model_flops;
    }
  } else {
    side.model_flops = cache->model_flops;
  }
  side.stages.resize(static_cast<std::size_t>(s.pp));
  // Without full recompute every body layer takes the strategy's mode; under it the fully
  // recomputed layers take full and the rest recompute_rest (§5.4).
  const Recompute rest_mode = s.recompute == Recompute::full ? o.recompute_rest : s.recompute;
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const PlannedStage& ps = plan.stages[static_cast<std::size_t>(i)];
    StageCompute& sc = side.stages[static_cast<std::size_t>(i)];
    if (ps.twin != PlannedStage::kNoTwin) {  // the same layer counts and no end: the same figures
      sc = side.stages[ps.twin];
      sc.partial.stage = i;
      continue;
    }
    sc = StageCompute{};
    StageTime& st = sc.partial;
    st.stage = i;
    double P_d = 0, P_e = 0, units = 0;
    double tp_c = 0, cp_c = 0, ep_c = 0;
    // `n` layers of one kind in one mode: a stage's time is the sum of its layers' (§7.2–§7.5).
    auto add_layers = [&](std::size_t kind, Recompute mode, double n) {
      const LayerTime& t = kind == 1 ? moe : dense;
      const int k = static_cast<int>(mode);
      st.forward += n * t.forward;
      st.backward += n * t.backward;
      st.weight_grad += n * t.weight_grad;
      st.recompute += n * t.recompute[k];
      double tp_l = t.tp, ep_l = t.ep, cp_l = t.cp;
      // Recompute repeats the forward communication of what it recomputes (§7.5).
      if (mode == Recompute::full) {
        tp_l += t.tp_forward;
        ep_l += t.ep_forward;
      }
      if (t.recompute_repeats_cp[k]) cp_l += t.cp_forward;
      tp_c += n * tp_l;
      cp_c += n * cp_l;
      ep_c += n * ep_l;
      const RankParams& p = kind == 1 ? moe_p : dense_p;
      P_d += n * (p.non_expert + p.shared);
      P_e += n * p.routed;
      units += n;
    };
    for (std::size_t kind = 0; kind < 2; ++kind) {
      for (std::size_t full = 0; full < 2; ++full) {
        const std::int64_t n = ps.body_layers[kind][full];
        if (n > 0) add_layers(kind, full == 1 ? Recompute::full : rest_mode, static_cast<double>(n));
      }
    }
    if (ps.embedding) {
      P_d += table + static_cast<double>(m.positions) * h;
      units += 1;
    }
    if (ps.head) {
      // Logits: one forward kernel and two backward ones per loss; MTP depths are body layers of
      // the head's stage, with their eh_proj and their own logits (ruling 9).
      const double losses = static_cast<double>(1 + m.mtp_depths);
      st.forward += losses * logits_f;
      st.backward += losses * 2 * logits_f;
      st.weight_grad += losses * logits_f;
      if (m.mtp_depths > 0) {
        const double depths = static_cast<double>(m.mtp_depths);
        const Recompute last = s.recompute == Recompute::full ? Recompute::full : s.recompute;
        add_layers(m.layer_ffn.back() == FfnKind::moe ? 1 : 0, last, depths);
        st.forward += depths * eh_f;
        st.backward += depths * 2 * eh_f;
        st.weight_grad += depths * eh_f;
        P_d += depths * (static_cast<double>(mtp_extra_split(m)) / tp + static_cast<double>(mtp_extra_repl(m)));
      }
      P_d += (m.tie && !plan.split_ends ? 0 : table) + static_cast<double>(m.norm_params());
      if ((m.tie || m.mtp_depths > 0) && plan.split_ends) P_d += table;
      units += 1;
    }
    st.comm_tp = tp_c;
    st.comm_cp = cp_c;
    st.comm_ep = ep_c;
    st.comm_pp = p2p;
    sc.P_d = P_d;
    sc.P_e = P_e;
    sc.units = units;
    sc.embedding = ps.embedding;
    sc.head = ps.head;
  }
  // step_time_floor (step_time.hpp): the makespan over each τ_i without its ZeRO exposure (summed
  // as estimate_step_time_into sums τ_i, without its last term comm_zero ≥ 0), and no tail.
  side.floor = 0;
  if (s.schedule != Schedule::dualpipev) {
    thread_local std::vector<StageTime> floor_stages;
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

namespace {

const ComputeSide& side_of(StepTimeScratch& scratch, const Model& m, const Run& run, const Device& d, const Strategy& s,
                           const LayoutPlan& plan) {
  if (scratch.memo_context == 0) {
    compute_side(scratch.side, nullptr, 0, m, run, d, s, plan);
    return scratch.side;
  }
  bool fresh = false;
  ComputeSide& kept = scratch.memo.find(scratch.memo_context, s, fresh);
  if (fresh) compute_side(kept, &scratch.layer_times, scratch.memo_context, m, run, d, s, plan);
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
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(s.tp);
  const double seq = static_cast<double>(run.seq);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  const std::int64_t world = s.world();
  const ComputeSide* side = &side_of(scratch, m, run, d, s, plan);

  // Data-parallel groups (§4).
  const bool tree = run.options.latency_tree;
  const ZeroDivisors z = zero_divisors(s, run);
  const Group reduce = make_group(d, s.tp, s.dp * s.cp, tree);
  const Group shard = make_group(d, s.tp, s.zero >= 1 ? s.shard_group : 1, tree);
  const bool hsdp = s.zero >= 1 && s.shard_group < s.dp * s.cp;
  const Group replicate = make_group(d, s.tp * s.shard_group, hsdp ? s.dp * s.cp / s.shard_group : 1, tree);
  const Group expert_reduce = make_group(d, s.etp * s.ep, s.expert_dp(), tree);
  const Group expert_shard = make_group(d, s.etp * s.ep, s.zero >= 1 ? static_cast<std::int64_t>(z.OSe) : 1, tree);
  const bool reshard = reshards_after_forward(run, s);
  const double table = v_pad * h / tp;
  const bool split_ends = plan.split_ends;
  const Group ends = make_group(d, s.tp * s.cp * s.dp * std::max<std::int64_t>(1, s.pp - 1), 2, tree);
  const double bucket_group = static_cast<double>(s.zero >= 2 ? s.shard_group : s.dp * s.cp);
  const double bucket_params = std::max(40e6, 1e6 * bucket_group);
  const Precision& pr = run.precision;

  std::vector<StageTime> stages = std::move(r.stages);
  r = TimeReport{};
  r.stages = std::move(stages);
  r.stages.resize(static_cast<std::size_t>(s.pp));
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const StageCompute& sc = side->stages[static_cast<std::size_t>(i)];
    StageTime& st = r.stages[static_cast<std::size_t>(i)];
    st = sc.partial;
    const double P_d = sc.P_d, P_e = sc.P_e, units = sc.units;
    const bool embedding = sc.embedding, head = sc.head;

    // ZeRO / FSDP (§7.5, §7.6): per micro-batch exposure and the tail.
    // dp_overlap off (§7.6): no window, all of it exposed.
    const bool overlap = run.options.dp_overlap;
    const double win_f = overlap ? st.forward : 0, win_b = overlap ? st.backward + st.recompute : 0;
    const double n_b = std::ceil((P_d + P_e) / bucket_params);
    const double t_rs = reduce_scatter(shard, P_d * pr.beta_gcomm) + reduce_scatter(expert_shard, P_e * pr.beta_gcomm);
    const double t_ag = all_gather(shard, P_d * pr.beta_gather) + all_gather(expert_shard, P_e * pr.beta_gather);
    const double t_hsdp = hsdp ? all_reduce(replicate, P_d * pr.beta_gcomm / static_cast<double>(s.shard_group)) : 0;
    double c_red = 0, c_ag = 0;
    switch (s.zero) {
      case 0:
        c_red = exposed(all_reduce(reduce, P_d * pr.beta_gcomm) + all_reduce(expert_reduce, P_e * pr.beta_gcomm), win_b, n_b);
        break;
      case 1:
        c_red = exposed(t_rs + t_hsdp, win_b, n_b);
        c_ag = exposed(t_ag, win_f, n_b);
        break;
      case 2:
        st.comm_zero = exposed(t_rs, win_b, n_b);
        c_red = exposed(t_hsdp, win_b, n_b);
        c_ag = exposed(t_ag, win_f, n_b);
        break;
      default:
        if (reshard) {
          st.comm_zero = exposed(t_ag, win_f, units) + exposed(t_ag + t_rs, win_b, units);
        } else {
          st.comm_zero = exposed(t_rs, win_b, units);
          c_ag = exposed(t_ag, win_f, units);
        }
        c_red = exposed(t_hsdp, win_b, n_b);
    }
    // Tied tables and the MTP embedding copy: one all-reduce between the two end stages.
    const double c_emb = (m.tie || m.mtp_depths > 0) && split_ends && (embedding || head)
                             ? all_reduce(ends, table * pr.beta_gcomm)
                             : 0;
    st.comm_dp = c_red + c_ag + c_emb;
    const double p_opt = s.zero >= 1 ? P_d / z.OS + P_e / z.OSe : P_d + P_e;
    st.optimizer = p_opt * step_bytes(run) / (d.eta_hbm * d.hbm_bandwidth);
    st.tau = st.forward + st.backward + st.recompute + st.comm_tp + st.comm_cp + st.comm_ep + st.comm_pp + st.comm_zero;
  }

  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    if (r.stages[i].tau > r.stages[static_cast<std::size_t>(r.slowest_stage)].tau) r.slowest_stage = static_cast<std::int64_t>(i);
    if (r.stages[i].tail() > r.stages[static_cast<std::size_t>(r.tail_stage)].tail()) r.tail_stage = static_cast<std::int64_t>(i);
  }
  const StageTime& slow = r.stages[static_cast<std::size_t>(r.slowest_stage)];
  const StageTime& last = r.stages[static_cast<std::size_t>(r.tail_stage)];
  const double m_mb = static_cast<double>(s.num_microbatches);
  r.pipe = pipeline_makespan(s, r.stages);
  r.tail = last.tail();
  r.step = r.pipe + r.tail;
  r.forward = m_mb * slow.forward;
  r.backward = m_mb * slow.backward;
  r.recompute = m_mb * slow.recompute;
  r.comm_tp = m_mb * slow.comm_tp;
  r.comm_cp = m_mb * slow.comm_cp;
  r.comm_ep = m_mb * slow.comm_ep;
  r.comm_pp = m_mb * slow.comm_pp;
  r.comm_zero = m_mb * slow.comm_zero;
  r.bubble = r.pipe - m_mb * slow.tau;
  r.comm_dp = last.comm_dp;
  r.optimizer = last.optimizer;
  const double gb = static_cast<double>(run.global_batch), N = static_cast<double>(world);
  r.tokens_per_sec_per_device = gb * seq / (r.step * N);
  r.model_flops = side->model_flops;
  r.mfu = r.model_flops / (r.step * N * d.peak_flops);
}

}  // namespace meshfit
