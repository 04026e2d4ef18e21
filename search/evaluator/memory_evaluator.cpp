#include "search/evaluator/memory_evaluator.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>

#include "estimators/backward_transients.hpp"
#include "estimators/grad_clip.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/layer_activations.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "estimators/model_states.hpp"
#include "estimators/overheads.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/rules_profile.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "search/evaluator/slot_hash.hpp"
#include "estimators/strategy_rules.hpp"
#include "estimators/zero_buffers.hpp"

namespace meshfit {

namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();
using Part = StageActivations::Part;

// A Tr_layer candidate X − K_after of layer kind `k` at body index `at` (§9.1). Pg + Rg + Xsp,
// added later, depend only on the kind, and adding a constant keeps the order of floating-point
// values, so the kind's largest base gives its largest candidate. Strictly greater: on a tie the
// first the scan meets stands, as in the one-pass scan.
void offer(std::array<double, 2>& best, std::array<std::int64_t, 2>* at, std::array<std::int64_t, 2>* order,
           std::size_t k, double base, std::int64_t layer, std::int64_t position) {
  if (base > best[k]) {
    best[k] = base;
    if (at) (*at)[k] = layer;
    if (order) (*order)[k] = position;
  }
}

// The evaluator's reuse (the memo, twin chunks, totals without stages) is written for the
// standard profile's variants (rules_profile.hpp); under another profile it walks and totals
// every strategy in full.
bool standard_profile(const RulesProfile& rules) { return &rules == &rules_profile(Rules::standard); }

// §9.8: DualPipeV's two chunks overlap, and the stage's transient reads each chunk's own.
bool dualpipev_overlap(const Strategy& s) { return s.schedule == Schedule::dualpipev && s.vpp == 2; }

// Everything of the estimate that neither z nor G changes (memory-model.md §7–§9); the in-flight
// counts per chunk only with `counts`.
// `walks` and `states` are the scratch's (their storage kept from estimate to estimate).
void activation_side(ActivationSide& side, std::vector<ChunkWalk>& walks, InterleavedStateTable& states,
                     const LayoutPlan& plan, KindCache* cache, std::uint64_t context, const Model& m, const Run& run,
                     const Device& dev, const Strategy& s, bool counts) {
  side.counts = counts;
  const RulesProfile& rules = rules_profile(run);
  // Item 13's variant prices each stage's last body layer only: every chunk is walked (no twins).
  const bool last_layer_only = rules.layer_transient == LayerTransientRule::stage_last_layer;
  const bool whole_input = rules.full_layer_kept == FullLayerKept::whole_sequence_input;
  const RunOptions& o = run.options;
  const std::int64_t nv = s.virtual_stages();
  const double h = static_cast<double>(m.hidden);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  const double g_kv = rules.gathered_kv(m, run, s);
  const double seed_full_input = whole_input ? sapp_nd::full_layer_input(m, run, s) : 0;
  auto kind = [&](FfnKind ffn, RankParams& params) {
    params = layer_rank_params(m, s, ffn);
    return kind_activation(m, run, s, ffn, n_cp, g_kv);
  };
  // The kinds, from the cache when this search (context) has met their key.
  const std::array<std::int64_t, 8> key{s.tp,   s.sigma(), s.cp,  static_cast<std::int64_t>(s.cp_algo),
                                        s.cp_u, s.ep,      s.etp, s.micro_batch};
  std::optional<KindCache::Entry> local;  // without a cache (made only then)
  KindCache::Entry* entry = nullptr;
  if (cache && context != 0) {
    if (cache->slots.empty()) cache->slots.resize(kTableSlots);
    entry = &cache->slots[slot_of(key)];
  }
  if (!entry || entry->context != context || !same_key(entry->key, key)) {
    std::array<KindActivation, 2> fresh{};
    std::array<RankParams, 2> params{};
    fresh[0] = kind(FfnKind::dense, params[0]);
    if (m.is_moe()) {
      fresh[1] = kind(FfnKind::moe, params[1]);
    } else {
      fresh[1] = fresh[0];
      params[1] = params[0];
    }
    if (!entry) entry = &local.emplace();
    entry->context = context;
    entry->key = key;
    entry->kinds = fresh;
    entry->params = params;
  }
  side.params = entry->params;
  const KindActivation& dense = entry->kinds[0];
  const KindActivation& moe = entry->kinds[1];
  auto figures = [&](FfnKind ffn) -> const KindActivation& { return ffn == FfnKind::moe ? moe : dense; };

  // The ends of the model (§7.7).
  const double k_emb = embedding_kept(m, run, s, n_cp);
  const OutputActivation output = output_activation(m, run, s, n_cp, v_pad);
  const double k_out = output.kept, tr_logits = output.logits;
  const FfnKind mtp_ffn = m.layer_ffn.empty() ? FfnKind::dense : m.layer_ffn.back();
  const std::size_t mtp_kind = mtp_ffn == FfnKind::moe ? 1 : 0;

  // The CP and EP buffers are the same on every stage that holds layers (MoE layers for EP).
  const double tr_cp = rules.cp_buffer(m, run, s, dev.devices_per_node);
  const double tr_ep = m.is_moe() ? ep_buffer_transient(m, run, s, n_cp) : 0;
  // Grown, never shrunk: a memo entry serves strategies of every pp in turn, and shrinking would
  // free the stages' vectors only for the next larger pp to allocate them again.
  if (side.stages.size() < static_cast<std::size_t>(s.pp)) side.stages.resize(static_cast<std::size_t>(s.pp));
  const auto n_chunks = static_cast<std::size_t>(s.vpp);
  // Without full recompute every run takes the strategy's mode; under it the fully recomputed
  // layers take full and the rest recompute_rest.
  const Recompute rest_mode = s.recompute == Recompute::full ? o.recompute_rest : s.recompute;
  const bool per_chunk_tr = dualpipev_overlap(s);
  const bool per_chunk_full = grad_clip_adjusts(run);
  // Neither per-chunk figure wanted: a chunk that repeats runs its stage has met only takes its bytes.
  const bool plain = !per_chunk_tr && !per_chunk_full;
  // A run's figures by (kind, full): what the loops below read per run.
  std::array<std::array<LayerActivation, 2>, 2> run_act{};
  std::array<double, 2> attn_tp{};  // n_cp · w_att_tp per kind (§9.3's attention transient)
  for (std::size_t ki = 0; ki < 2; ++ki) {
    const KindActivation& k = ki == 1 ? moe : dense;
    for (const bool full : {false, true}) {
      const Recompute mode = full ? Recompute::full : rest_mode;
      LayerActivation act = k.by_mode[static_cast<std::size_t>(mode)];
      if (whole_input && mode == Recompute::full) act.kept = seed_full_input;
      run_act[ki][full ? 1 : 0] = act;
    }
    attn_tp[ki] = n_cp * k.census.w_att_tp;
  }
  // The walked chunks' figures (layout_plan.hpp's twins), by chunk index.
  if (walks.size() < plan.chunks.size()) walks.resize(plan.chunks.size());
  for (std::int64_t i = 0; i < s.pp; ++i) {
    StageActivations& a = side.stages[static_cast<std::size_t>(i)];
    const PlannedStage& ps = plan.stages[static_cast<std::size_t>(i)];
    // The partial's fields this side sets are all set below, every time; the others stay at
    // their defaults (nothing else writes a side's partial), so it is not cleared first.
    StageMemory& st = a.partial;
    st.stage = i;
    st.layers = ps.layers;
    st.full_recompute = ps.full_recompute;
    st.embedding = ps.embedding;
    st.head = ps.head;
    st.mtp_depths = ps.mtp_depths;
    st.chunk_bytes.resize(n_chunks);  // every chunk's bytes are set below
    a.tr_base = {kNone, kNone};
    a.tr_at = {-1, -1};
    a.tr_order = {0, 0};
    a.kind_present = ps.kind_present;
    a.seed_last_kind = -1;
    a.seed_last_at = -1;
    // Per-chunk figures only the totals that read them are given: DualPipeV's overlap (§9.8) and
    // the grad-clip seed adjustment (§9.9); otherwise left as they were and not read.
    if (per_chunk_tr) a.chunk_tr_base.assign(n_chunks, {kNone, kNone});
    if (per_chunk_full) {
      a.full_layers.assign(n_chunks, {0, 0});
      a.full_kept.assign(n_chunks, 0.0);
    }
    a.has_moe = ps.has_moe;
    a.last_layer_kind = ps.last_layer_kind;
    double tr_attn = 0;
    std::int64_t position = 0;  // candidates in the order the one-pass scan meets them
    std::int64_t seed_last_vstage = -1;

    // Without per-chunk figures the stage's repeats (layout_plan.hpp) only take their twin's bytes:
    // the other chunks are walked, in order, and the repeats copied after.
    const bool listed = plain && !last_layer_only;
    const std::int64_t walked_chunks = listed ? static_cast<std::int64_t>(ps.walk_end - ps.walk_begin) : s.vpp;
    for (std::int64_t n = 0; n < walked_chunks; ++n) {
      const std::int64_t c =
          listed ? static_cast<std::int64_t>(plan.walk_chunks[ps.walk_begin + static_cast<std::size_t>(n)]) : n;
      const auto cu = static_cast<std::size_t>(c);
      const PlannedChunk& pc = plan.chunk(i, c);
      const std::int64_t u = pc.vstage;
      double& A = st.chunk_bytes[cu];
      if (!last_layer_only && pc.twin != PlannedChunk::kNoTwin) {
        // The same runs as an earlier chunk walked in this call: the same figures, in the same
        // order of additions. Offering only its first largest candidate per kind leaves the
        // stage's first largest (and its position) as the scan over every run would.
        const ChunkWalk& w = walks[pc.twin];
        A = w.A;
        // Once this stage has been offered the walked chunk's candidates (by it or by a twin:
        // pc.repeat), its largest per kind are at least those, and the strict > takes none of
        // them again; its attention transient is in tr_attn already.
        if (pc.repeat && plain) continue;
        if (!pc.repeat) tr_attn = std::max(tr_attn, w.tr_attn);
        for (std::size_t k = 0; k < 2; ++k) {
          if (w.best_run[k] < 0) continue;
          if (per_chunk_tr) offer(a.chunk_tr_base[cu], nullptr, nullptr, k, w.best[k], 0, 0);
          if (pc.repeat) continue;
          const PlannedRun& R = plan.runs[pc.begin + static_cast<std::uint32_t>(w.best_run[k])];
          const std::int64_t at = run_act[R.kind][R.full ? 1 : 0].kept < 0 ? R.first : R.first + R.count - 1;
          offer(a.tr_base, &a.tr_at, &a.tr_order, k, w.best[k], at, pc.position + w.best_offset[k]);
        }
        if (per_chunk_full) {
          a.full_layers[cu] = w.full_layers;
          a.full_kept[cu] = w.full_kept;
        }
        continue;
      }
      position = pc.position;
      A = 0;
      // What a twin copies, when this chunk has one (filled as the chunk is walked).
      ChunkWalk* walk = pc.walked && !last_layer_only ? &walks[static_cast<std::size_t>(i * s.vpp + c)] : nullptr;
      if (walk) *walk = ChunkWalk{};
      const std::int64_t chunk_start = position;
      Recompute last_mode = rest_mode;
      double tr_attn_chunk = 0;
      // The chunk's layers as runs of one kind and one recompute mode (layout_plan.hpp).
      for (std::uint32_t r = pc.begin; r < pc.end; ++r) {
        const PlannedRun& R = plan.runs[r];
        const Recompute mode = R.full ? Recompute::full : rest_mode;
        last_mode = mode;
        const LayerActivation& act = run_act[R.kind][R.full ? 1 : 0];
        if (per_chunk_full && mode == Recompute::full) {
          a.full_layers[cu][R.kind] += R.count;
          a.full_kept[cu] = act.kept;
        }
        A += static_cast<double>(R.count) * act.kept;
        tr_attn = std::max(tr_attn, attn_tp[R.kind]);
        tr_attn_chunk = std::max(tr_attn_chunk, attn_tp[R.kind]);
      }
      double output_side = 0;  // kept bytes the backward frees before reaching the body layers
      if (u == 0) A += k_emb;
      if (u == nv - 1) {
        // The backward frees the logits of the head and of every MTP depth before it reaches a
        // body layer (§9.1's "K_out and MTP logits").
        output_side = k_out * static_cast<double>(1 + m.mtp_depths);
        A += output_side;
        // MTP depths (§4.8, §7.7): a body layer of the last layer's kind, eh_proj and norms; each
        // keeps its layer's K_1 and its two inputs and their concatenation (3h), besides its logits.
        const KindActivation& k = figures(mtp_ffn);
        const LayerActivation act = layer_activation(k.census, last_mode, n_cp, h, run, s);
        const double mtp_kept = mtp_depth_kept(act, n_cp, m, run, s);
        for (std::int64_t d = 0; d < m.mtp_depths; ++d) {
          A += mtp_kept;
          // K_after of depth d: the logits, and the later depths' kept bytes.
          const double after = output_side + mtp_kept * static_cast<double>(m.mtp_depths - 1 - d);
          const double base = act.working - after;
          offer(a.tr_base, &a.tr_at, &a.tr_order, mtp_kind, base, m.layers + d, position++);
          if (per_chunk_tr) offer(a.chunk_tr_base[cu], nullptr, nullptr, mtp_kind, base, 0, 0);
          tr_attn = std::max(tr_attn, n_cp * k.census.w_att_tp);
        }
      }
      // §9.1: Tr_layer(ℓ) = X − K_after + Pg + Rg + Xsp, scanning from the chunk's last layer.
      // Within a run K_after grows by `kept` ≥ 0 per layer, so the run's largest candidate is
      // its last layer (the first the scan meets, which a strict > keeps on ties); were `kept`
      // negative it would be its first layer.
      double after = output_side;
      for (std::uint32_t j = pc.end; j-- > pc.begin;) {
        const PlannedRun& R = plan.runs[j];
        const LayerActivation& act = run_act[R.kind][R.full ? 1 : 0];
        const double steps = act.kept < 0 ? static_cast<double>(R.count - 1) : 0;
        const double base = act.working - (after + steps * act.kept);
        const std::int64_t at = act.kept < 0 ? R.first : R.first + R.count - 1;
        const std::int64_t last = R.first + R.count - 1;
        if (last_layer_only) {
          // Item 13: the stage's last body layer only; per chunk, the fully recomputed layers.
          if (j + 1 == pc.end && u > seed_last_vstage) {
            seed_last_vstage = u;
            a.seed_last[0] = act.working - after;
            a.seed_last_kind = R.kind;
            a.seed_last_at = last;
          }
          if (per_chunk_tr && R.full) offer(a.chunk_tr_base[cu], nullptr, nullptr, R.kind, base, 0, 0);
        } else {
          if (walk && base > walk->best[R.kind]) {
            walk->best[R.kind] = base;
            walk->best_run[R.kind] = static_cast<std::int64_t>(j - pc.begin);
            walk->best_offset[R.kind] = position - chunk_start;
          }
          offer(a.tr_base, &a.tr_at, &a.tr_order, R.kind, base, at, position++);
          if (per_chunk_tr) offer(a.chunk_tr_base[cu], nullptr, nullptr, R.kind, base, 0, 0);
        }
        after += static_cast<double>(R.count) * act.kept;
      }
      if (walk) {
        walk->A = A;
        walk->tr_attn = tr_attn_chunk;
        if (per_chunk_full) {
          walk->full_layers = a.full_layers[cu];
          walk->full_kept = a.full_kept[cu];
        }
      }
    }
    if (listed) {
      for (std::uint32_t k = ps.repeat_begin; k < ps.repeat_end; ++k) {
        const auto& [c, twin] = plan.repeat_chunks[k];
        st.chunk_bytes[c] = walks[twin].A;
      }
    }

    if (rules.in_flight == InFlightCounts::seed_micro_factors) {  // item 8
      st.chunk_inflight = sapp_nd::micro_factors(s, i);
      double peak = 0;
      for (std::size_t c = 0; c < st.chunk_inflight.size(); ++c) {
        peak += static_cast<double>(st.chunk_inflight[c]) * st.chunk_bytes[c];
      }
      st.activations = peak;
    } else {
      const InterleavedStates* timeline = states.of(s, i);
      st.activations = counts ? in_flight_into(st.chunk_inflight, s, i, st.chunk_bytes, timeline)
                              : in_flight_peak(s, i, st.chunk_bytes, timeline);
    }
    st.tr_attn = tr_attn;
    st.tr_logits = st.head ? tr_logits : 0;
    st.tr_cp = st.layers + st.mtp_depths > 0 ? tr_cp : 0;
    st.tr_ep = a.has_moe ? tr_ep : 0;
  }
}

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
  st.tr_fsdp = p.tr_fsdp;
  st.tr_dpv = p.tr_dpv;
  st.tr_layer_at = p.tr_layer_at;
}

// The key a StaticSide is kept under: `s` without its micro-batch size, micro-batch count and
// recompute mode. No part of the (z, G) side reads the mode; it reads the layout plan's model-state
// parts, which full recompute splits where a chunk's fully recomputed layers end — except when
// every layer is (n_rc unset, no per-stage counts), so then all modes share one key.
Strategy static_key(const Strategy& s, const Run& run) {
  Strategy k = s;
  k.micro_batch = 1;
  k.num_microbatches = 1;
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
                   const Strategy& s, bool gather_per_layer, double x_sp) {
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
    const double backward = t.stat + (t.defers ? t.deferred : p.deferred_grads) + p.activations + transient;
    const double reserved = std::max(backward, t.step) * (1 + dev.fragmentation);
    const double device = reserved + dev.overhead_context + t.communicator_buffers + dev.overhead_workspaces +
                          t.ep_library + dev.overhead_fixed;
    if (i == 0 || device > report.peak) {
      report.peak = device;
      report.peak_stage = i;
    }
  }
  report.static_floor = statics.static_floor;
  report.fits = report.peak <= report.budget;
}

// The estimate: the activation side, then per (z, G) the model states, the ZeRO/FSDP parts of the
// transients and the totals (§6, §9, §11). `statics` holds the (z, G) side's b-free parts, reused
// when its key and `context` match (context 0: always recomputed).
void finish(MemoryReport& report, std::vector<StageMemory>& spare, bool detail, const ActivationSide& side,
            StaticSide& statics, std::uint64_t context, const Model& m, const Run& run, const Device& dev,
            const Strategy& s, const PipelineLayout& layout, const LayoutPlan& plan, double headroom_bytes) {
  const RulesProfile& rules = rules_profile(run);
  const bool seed_counts = rules.layer_counts == LayerCounts::seed_counts;
  const bool last_layer_only = rules.layer_transient == LayerTransientRule::stage_last_layer;
  const RunOptions& o = run.options;
  const double h = static_cast<double>(m.hidden);
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  const bool reshard = reshards_after_forward(run, s);
  const bool gather_per_layer = s.zero == 3 && reshard;
  const double x_sp = s.tp > 1 && s.sp ? n_cp * o.beta_a * h : 0;  // Xsp of §9.1
  const Strategy key = static_key(s, run);
  const bool fresh_statics = context == 0 || statics.context != context || !(statics.key == key);
  report.capacity = dev.capacity;
  report.budget = dev.capacity - headroom_bytes;
  // Without detail, under the standard profile (finish_totals prices its variants only) and
  // without the grad-clip copy or DualPipeV's overlap (which read per-chunk figures), only the
  // totals are made.
  const bool totals_only = !detail && standard_profile(rules) && !grad_clip_adjusts(run) && !dualpipev_overlap(s);
  if (totals_only && !fresh_statics) {
    while (!report.stages.empty()) {  // (kept for a later detailed estimate, as below)
      spare.push_back(std::move(report.stages.back()));
      report.stages.pop_back();
    }
    finish_totals(report, side, statics, dev, s, gather_per_layer, x_sp);
    return;
  }
  const ZeroDivisors z = zero_divisors(s, run);
  const bool keep_gathered = s.zero == 3 && !reshard;  // §6.1
  const EndParams ends = end_params(m, run, s);        // §4.7, §4.8, §5.3
  const RankParams& embedding_table = ends.embedding;
  const RankParams& vocab_table = ends.vocab;
  const RankParams& final_norm = ends.final_norm;
  const bool split_ends = layout.vstages.front().stage != layout.head_stage;

  if (fresh_statics) {
    statics.context = context;
    statics.key = key;
    const sapp_nd::Factors seed_f = seed_counts ? sapp_nd::factors(m, s) : sapp_nd::Factors{};
    auto kind = [&](FfnKind ffn, const RankParams& params) {
      KindStates k;
      k.states = model_states(params, z, run, false, keep_gathered);
      if (gather_per_layer) k.gathered_params = gathered_layer_params(params, run);
      if (seed_counts) {
        const sapp_nd::Counts counts = sapp_nd::counts(m, ffn, s);
        k.states = sapp_nd::layer_states(counts, seed_f, run);
        if (keep_gathered) k.states.gathered = run.precision.beta_gather * params.total();
        k.reduce_buffers = sapp_nd::reduced_grads(counts, seed_f, s, run);
        k.clip = sapp_nd::grad_clip_buffer(counts, seed_f, run);
        k.dp_comm = sapp_nd::dp_comm_elements(counts, seed_f, s, m.is_moe());
      } else {
        k.reduce_buffers = reduce_scatter_buffers(params, z, run, s);
      }
      return k;
    };
    statics.kinds = {kind(FfnKind::dense, side.params[0]),
                     m.is_moe() ? kind(FfnKind::moe, side.params[1]) : KindStates{}};
    if (!m.is_moe()) statics.kinds[1] = statics.kinds[0];
    // Each end part's states, the same on whichever stage holds it (index: Part's value).
    std::array<ModelStates, 6> end_states{};
    end_states[static_cast<std::size_t>(Part::embedding)] = model_states(embedding_table, z, run, true, keep_gathered);
    end_states[static_cast<std::size_t>(Part::vocab)] = model_states(vocab_table, z, run, true, keep_gathered);
    end_states[static_cast<std::size_t>(Part::final_norm)] = model_states(final_norm, z, run, false, keep_gathered);
    end_states[static_cast<std::size_t>(Part::mtp_extra)] = model_states(ends.mtp_extra, z, run, false, keep_gathered);
    statics.stages.assign(static_cast<std::size_t>(s.pp), ModelStates{});
    statics.held.assign(static_cast<std::size_t>(s.pp), 0.0);
    statics.communicators.assign(static_cast<std::size_t>(s.pp), 0);
    for (std::size_t i = 0; i < statics.stages.size(); ++i) {
      const PlannedStage& ps = plan.stages[i];
      if (ps.twin != PlannedStage::kNoTwin) {  // the same parts, kinds and ends: the same figures
        statics.stages[i] = statics.stages[ps.twin];
        statics.held[i] = statics.held[ps.twin];
        statics.communicators[i] = statics.communicators[ps.twin];
        continue;
      }
      const StageActivations& a = side.stages[i];
      const StageGroups groups{a.has_moe,
                               (m.tie || m.mtp_depths > 0) && split_ends && (a.partial.embedding || a.partial.head)};
      statics.communicators[i] = communicator_count(s, m.is_moe(), groups);
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
      if (gather_per_layer && run.profile.fsdp_root_and_last_block_unsharded) {
        // FSDP2 never reshards the root module after forward (its backward starts at once), and
        // torchtitan leaves the last block unsharded for the same reason: the stage's tables,
        // final norm and last body layer stay gathered from the forward through the backward.
        double held = a.last_layer_kind >= 0 ? side.params[static_cast<std::size_t>(a.last_layer_kind)].total() : 0;
        for (auto it = parts_begin; it != parts_end; ++it) {
          const Part part = it->first;
          if (part == Part::embedding) held += embedding_table.total();
          if (part == Part::vocab) held += vocab_table.total();
          if (part == Part::final_norm) held += final_norm.total();
        }
        statics.held[i] = run.precision.beta_gather * held;
      }
    }
    // The b-free addends of each stage's totals, in finish's own expressions and order.
    statics.totals.assign(statics.stages.size(), StaticSide::Totals{});
    statics.static_floor = 0;
    const bool defers = defers_grad_sync(run, s);
    for (std::size_t i = 0; i < statics.stages.size(); ++i) {
      if (plan.stages[i].twin != PlannedStage::kNoTwin) {
        statics.totals[i] = statics.totals[plan.stages[i].twin];
        continue;
      }
      const StageActivations& a = side.stages[i];
      const ModelStates& states = statics.stages[i];
      StaticSide::Totals& t = statics.totals[i];
      StageMemory st;
      st.weights = states.weights;
      st.grads = states.grads;
      st.optimizer = states.optimizer;
      st.gathered = states.gathered + statics.held[i];
      st.fp8_cache = states.fp8_cache;
      t.stat = st.static_total();
      t.step = t.stat + optimizer_step_transient(states, s, run);
      t.defers = defers;
      if (defers) t.deferred = deferred_grad_bytes(states, run);
      double max_pg = 0, max_rg = 0;
      for (std::size_t k = 0; k < 2; ++k) {
        if (!a.kind_present[k]) continue;
        max_pg = std::max(max_pg, statics.kinds[k].gathered_params);
        max_rg = std::max(max_rg, statics.kinds[k].reduce_buffers);
      }
      if (gather_per_layer) {
        t.tr_fsdp =
            fsdp_gather_transient(max_pg, a.partial.embedding, a.partial.head, m.tie, split_ends, ends.table, run);
      }
      t.tr_bucket = grad_bucket_transient(max_rg, s, run);
      t.communicator_buffers = static_cast<double>(statics.communicators[i]) * dev.overhead_per_communicator;
      t.ep_library = a.has_moe ? dev.overhead_ep_library : 0;
      statics.static_floor = std::max(statics.static_floor, t.stat * (1 + dev.fragmentation) + dev.overhead_context +
                                                                t.communicator_buffers + dev.overhead_workspaces +
                                                                t.ep_library + dev.overhead_fixed);
    }
  }
  const KindStates& dense = statics.kinds[0];
  const KindStates& moe = statics.kinds[1];
  const std::array<double, 2> pg{dense.gathered_params, moe.gathered_params};
  const std::array<double, 2> rg{dense.reduce_buffers, moe.reduce_buffers};

  report.peak = 0;
  report.peak_stage = 0;
  report.static_floor = 0;
  // The report holds exactly pp stages (none without detail); those it no longer needs are kept
  // in `spare` with their vectors' storage, for a later larger pp (no allocation once warm).
  const auto pp = detail ? static_cast<std::size_t>(s.pp) : 0;
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
  if (totals_only) {
    finish_totals(report, side, statics, dev, s, gather_per_layer, x_sp);
    return;
  }
  StageMemory lean;  // the stage being totalled without detail (its vectors stay empty)
  for (std::int64_t i = 0; i < s.pp; ++i) {
    const StageActivations& a = side.stages[static_cast<std::size_t>(i)];
    StageMemory& st = detail ? report.stages[static_cast<std::size_t>(i)] : lean;
    if (detail) {
      st = a.partial;
    } else {
      copy_totals(st, a.partial);
    }
    const ModelStates& states = statics.stages[static_cast<std::size_t>(i)];
    st.weights = states.weights;
    st.grads = states.grads;
    st.optimizer = states.optimizer;
    st.gathered = states.gathered + statics.held[static_cast<std::size_t>(i)];
    st.fp8_cache = states.fp8_cache;
    // Ruling 10: with deferred gradient sync the stage holds every gradient unsharded, in the
    // reduce dtype (β_gcomm), from its first backward to the last reduce-scatter of the step.
    if (defers_grad_sync(run, s)) st.deferred_grads = deferred_grad_bytes(states, run);

    // §9.1's largest layer candidate: the better kind (the first met in the scan on a tie).
    double tr_layer = 0, max_pg = 0, max_rg = 0;
    if (last_layer_only) {
      if (a.seed_last_kind >= 0) {
        const auto k = static_cast<std::size_t>(a.seed_last_kind);
        tr_layer = layer_transient(a.seed_last[0], pg[k], rg[k], x_sp);
        st.tr_layer_at = a.seed_last_at;
      }
    } else {
      const LayerCandidate best = largest_layer_candidate(a.tr_base, a.tr_order, pg, rg, x_sp);
      tr_layer = best.transient;
      if (best.kind >= 0) st.tr_layer_at = a.tr_at[static_cast<std::size_t>(best.kind)];
    }
    for (std::size_t k = 0; k < 2; ++k) {
      if (!a.kind_present[k]) continue;
      const KindStates& ks = k == 1 ? moe : dense;
      max_pg = std::max(max_pg, ks.gathered_params);
      max_rg = std::max(max_rg, ks.reduce_buffers);
    }

    if (grad_clip_adjusts(run)) {
      for (std::size_t c = 0; c < a.full_layers.size(); ++c) {
        const double n = static_cast<double>(a.partial.chunk_inflight[c]);
        for (std::size_t kind_index = 0; kind_index < 2; ++kind_index) {
          const std::int64_t count = a.full_layers[c][kind_index];
          if (count == 0) continue;
          // A full layer keeps the same input whatever its kind (its K_1, or item 9's).
          const double fwd = n * a.full_kept[c];
          if (seed_counts) {
            // Item 10: the seed's own copy and DP comm (elements, as the seed counts them).
            const KindStates& k = kind_index == 1 ? moe : dense;
            st.activations += static_cast<double>(count) * grad_clip_addition(fwd, k.clip, k.dp_comm);
          } else {
            const RankParams& p = side.params[kind_index == 1 && m.is_moe() ? 1 : 0];
            st.activations += static_cast<double>(count) *
                              grad_clip_addition(fwd, grad_clip_copy(p, z, run), grad_clip_dp_comm(p, s, run));
          }
        }
      }
    }

    // §9: one transient on top of the in-flight activations, the largest candidate.
    st.tr_layer = tr_layer;
    if (gather_per_layer) {
      st.tr_fsdp = fsdp_gather_transient(max_pg, st.embedding, st.head, m.tie, split_ends, ends.table, run);
    }
    st.tr_bucket = grad_bucket_transient(max_rg, s, run);
    double layer_candidate = st.tr_layer;
    if (dualpipev_overlap(s)) {  // §9.8
      const std::array<double, 2> chunk_layer{
          largest_layer_candidate(a.chunk_tr_base[0], {0, 0}, pg, rg, x_sp).transient,
          largest_layer_candidate(a.chunk_tr_base[1], {0, 0}, pg, rg, x_sp).transient};
      st.tr_dpv = dualpipev_transient({a.partial.chunk_bytes[0], a.partial.chunk_bytes[1]}, chunk_layer);
      layer_candidate = st.tr_dpv;
    }
    st.transient =
        largest_transient(layer_candidate, st.tr_attn, st.tr_logits, st.tr_fsdp, st.tr_bucket, st.tr_cp, st.tr_ep);
    // §9.9: the optimizer-step phase.
    st.step_transient = optimizer_step_transient(states, s, run);

    // §11: totals.
    st.communicators = statics.communicators[static_cast<std::size_t>(i)];
    report.static_floor = std::max(report.static_floor, stage_totals(st, dev, a.has_moe));
    if (i == 0 || st.device > report.peak) {
      report.peak = st.device;
      report.peak_stage = i;
    }
  }
  report.fits = report.peak <= report.budget;
}

}  // namespace

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
  return !(grad_clip_adjusts(run) && s.recompute == Recompute::full);
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
  const Device dev = rules.device(cluster.device);
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
    activation_side(scratch.side, scratch.walks, scratch.interleaved, plan, nullptr, 0, m, run, dev, s, counts);
    finish(report, scratch.spare_stages, stage_detail, scratch.side, scratch.statics, 0, m, run, dev, s,
           scratch.layout(), plan, headroom_bytes);
    return;
  }
  bool fresh = false;
  ActivationSide& side = scratch.memo.find(context, s, fresh);
  // A side kept without counts is made again when they are wanted (the same figures, and them).
  if (fresh || (counts && !side.counts)) {
    activation_side(side, scratch.walks, scratch.interleaved, plan, &scratch.kinds, context, m, run, dev, s, counts);
  }
  finish(report, scratch.spare_stages, stage_detail, side, scratch.statics, context, m, run, dev, s, scratch.layout(),
         plan, headroom_bytes);
}

}  // namespace meshfit
