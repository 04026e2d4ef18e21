// The memory evaluator's activation side: per stage its chunks' kept bytes, its Tr_layer
// candidates, its attention/logits/CP/EP transients and its in-flight peak (memory-model.md
// §7–§9), none of which a ZeRO setting changes. The terms are estimators/' (layer_activations,
// backward_transients, in_flight); what is the evaluator's own is the walk over runs of equal
// layers and the copying of twin chunks (layout_plan.hpp).
#include <algorithm>
#include <array>
#include <optional>

#include "estimators/backward_transients.hpp"
#include "estimators/grad_clip.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/pipeline_stage_buffers.hpp"
#include "estimators/model_states.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/strategy_rules.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "search/evaluator/memory_sides.hpp"

namespace meshfit::evaluator_detail {

namespace {

// The layer kinds' figures and per-rank parameters, from the triple's table when the walk has met
// s's values there already, else made (into the table's entry, or into `local` without one).
const KindFigures& kinds_of(KindTable* table, std::optional<KindFigures>& local, const Model& m, const Run& run,
                            const Strategy& s, double n_cp) {
  return found_or_made(table, s, 0, local, [&](KindFigures& entry) {
    const double g_kv = rules_profile(run).gathered_kv(m, run, s);
    entry.params[0] = layer_rank_params(m, s, FfnKind::dense);
    entry.kinds[0] = kind_activation(m, run, s, FfnKind::dense, n_cp, g_kv);
    if (m.is_moe()) {
      entry.params[1] = layer_rank_params(m, s, FfnKind::moe);
      entry.kinds[1] = kind_activation(m, run, s, FfnKind::moe, n_cp, g_kv);
    } else {
      entry.kinds[1] = entry.kinds[0];
      entry.params[1] = entry.params[0];
    }
  });
}

// What every stage's walk reads, made once per estimate.
struct SideTerms {
  const Model& m;
  const Run& run;
  const Strategy& s;
  const LayoutPlan& plan;
  const std::array<KindActivation, 2>& kinds;  // dense, MoE
  // Item 13's variant prices each stage's last body layer only: every chunk is walked (no twins).
  bool last_layer_only = false;
  // Per-chunk figures, only where the totals read them: DualPipeV's overlap (§9.8) and the
  // grad-clip copy (§9.9). Without either, a chunk that repeats its stage's runs takes its bytes.
  bool per_chunk_tr = false, per_chunk_full = false, plain = true;
  std::int64_t nv = 1;
  double h = 0, n_cp = 0;
  // Without full recompute every run takes the strategy's mode; under it the fully recomputed
  // layers take full and the rest recompute_rest.
  Recompute rest_mode = Recompute::none;
  std::array<std::array<LayerActivation, 2>, 2> run_act{};           // a run's figures by (kind, full)
  std::array<double, 2> attn_tp{};                                   // n_cp · w_att_tp per kind (§9.3)
  double k_emb = 0, k_out = 0, tr_logits = 0, tr_cp = 0, tr_ep = 0;  // the ends (§7.7), §9.6, §9.7
  FfnKind mtp_ffn = FfnKind::dense;
  std::size_t mtp_kind = 0;
};

SideTerms side_terms(const Model& m, const Run& run, const Device& dev, const Strategy& s, const LayoutPlan& plan,
                     const std::array<KindActivation, 2>& kinds, double n_cp) {
  const RulesProfile& rules = rules_profile(run);
  SideTerms t{m, run, s, plan, kinds};
  t.last_layer_only = rules.layer_transient == LayerTransientRule::stage_last_layer;
  t.per_chunk_tr = dualpipev_overlap(s);
  t.per_chunk_full = grad_clip_adjusts(run);
  t.plain = !t.per_chunk_tr && !t.per_chunk_full;
  t.nv = s.virtual_stages();
  t.h = static_cast<double>(m.hidden);
  t.n_cp = n_cp;
  t.rest_mode = s.recompute == Recompute::full ? run.options.recompute_rest : s.recompute;
  const bool whole_input = rules.full_layer_kept == FullLayerKept::whole_sequence_input;
  const double seed_full_input = whole_input ? sapp_nd::full_layer_input(m, run, s) : 0;
  for (std::size_t ki = 0; ki < 2; ++ki) {
    for (const bool full : {false, true}) {
      const Recompute mode = full ? Recompute::full : t.rest_mode;
      LayerActivation act = kinds[ki].by_mode[static_cast<std::size_t>(mode)];
      if (whole_input && mode == Recompute::full) act.kept = seed_full_input;
      t.run_act[ki][full ? 1 : 0] = act;
    }
    t.attn_tp[ki] = n_cp * kinds[ki].census.w_att_tp;
  }
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  t.k_emb = embedding_kept(m, run, s, n_cp);
  const OutputActivation output = output_activation(m, run, s, n_cp, v_pad);
  t.k_out = output.kept;
  t.tr_logits = output.logits;
  // The CP and EP buffers are the same on every stage that holds layers (MoE layers for EP).
  t.tr_cp = rules.cp_buffer(m, run, s, dev.placement_domain());
  t.tr_ep = m.is_moe() ? ep_buffer_transient(m, run, s, n_cp) : 0;
  t.mtp_ffn = m.layer_ffn.empty() ? FfnKind::dense : m.layer_ffn.back();
  t.mtp_kind = t.mtp_ffn == FfnKind::moe ? 1 : 0;
  return t;
}

// A stage's figures before its chunks are walked: the layout plan's, and candidates cleared. The
// partial's fields this side sets are all set here or by the walk, every time; the others stay at
// their defaults (nothing else writes a side's partial), so it is not cleared first.
void start_stage(StageActivations& a, const PlannedStage& ps, const SideTerms& t, std::int64_t i) {
  const auto n_chunks = static_cast<std::size_t>(t.s.vpp);
  StageMemory& st = a.partial;
  st.stage = i;
  st.layers = ps.layers;
  st.full_recompute = ps.full_recompute;
  st.embedding = ps.embedding;
  st.head = ps.head;
  st.mtp_depths = ps.mtp_depths;
  st.chunk_bytes.resize(n_chunks);  // every chunk's bytes are set by the walk
  a.tr_base = {kNone, kNone};
  a.tr_at = {-1, -1};
  a.tr_order = {0, 0};
  a.kind_present = ps.kind_present;
  a.seed_last_kind = -1;
  a.seed_last_at = -1;
  // Per-chunk figures only where the totals read them; otherwise left as they were and not read.
  if (t.per_chunk_tr) a.chunk_tr_base.assign(n_chunks, {kNone, kNone});
  if (t.per_chunk_full) {
    a.full_layers.assign(n_chunks, {0, 0});
    a.full_kept.assign(n_chunks, 0.0);
  }
  a.has_moe = ps.has_moe;
  a.last_layer_kind = ps.last_layer_kind;
}

// Chunk c of stage i has the same runs as an earlier chunk walked in this estimate (`w`): the same
// figures, in the same order of additions. Offering only its first largest candidate per kind
// leaves the stage's first largest (and its position) as the scan over every run would.
void copy_twin(StageActivations& a, double& tr_attn, const ChunkWalk& w, const PlannedChunk& pc, std::size_t c,
               const SideTerms& t) {
  a.partial.chunk_bytes[c] = w.A;
  // Once this stage has been offered the walked chunk's candidates (by it or by a twin:
  // pc.repeat), its largest per kind are at least those, and the strict > takes none of them
  // again; its attention transient is in tr_attn already.
  if (pc.repeat && t.plain) return;
  if (!pc.repeat) tr_attn = std::max(tr_attn, w.tr_attn);
  for (std::size_t k = 0; k < 2; ++k) {
    if (w.best_run[k] < 0) continue;
    if (t.per_chunk_tr) offer(a.chunk_tr_base[c], nullptr, nullptr, k, w.best[k], 0, 0);
    if (pc.repeat) continue;
    const PlannedRun& R = t.plan.runs[pc.begin + static_cast<std::uint32_t>(w.best_run[k])];
    const std::int64_t at = t.run_act[R.kind][R.full ? 1 : 0].kept < 0 ? R.first : R.first + R.count - 1;
    offer(a.tr_base, &a.tr_at, &a.tr_order, k, w.best[k], at, pc.position + w.best_offset[k]);
  }
  if (t.per_chunk_full) {
    a.full_layers[c] = w.full_layers;
    a.full_kept[c] = w.full_kept;
  }
}

// The MTP depths at the end of the last virtual stage (§4.8, §7.7): a body layer of the last
// layer's kind in `mode`, eh_proj and norms, each keeping its layer's K_1 and its inputs (3h)
// besides its logits. Adds their kept bytes to A and offers their Tr_layer candidates.
void walk_mtp(StageActivations& a, double& A, double& tr_attn, std::int64_t& position, double output_side,
              Recompute mode, std::size_t c, const SideTerms& t) {
  const Model& m = t.m;
  const KindActivation& k = t.kinds[t.mtp_ffn == FfnKind::moe ? 1 : 0];
  const LayerActivation act = layer_activation(k.census, mode, t.n_cp, t.h, t.run, t.s);
  const double mtp_kept = mtp_depth_kept(act, t.n_cp, m, t.run, t.s);
  for (std::int64_t d = 0; d < m.mtp_depths; ++d) {
    A += mtp_kept;
    // K_after of depth d: the logits, and the later depths' kept bytes.
    const double after = output_side + mtp_kept * static_cast<double>(m.mtp_depths - 1 - d);
    const double base = act.working - after;
    offer(a.tr_base, &a.tr_at, &a.tr_order, t.mtp_kind, base, m.layers + d, position++);
    if (t.per_chunk_tr) offer(a.chunk_tr_base[c], nullptr, nullptr, t.mtp_kind, base, 0, 0);
    tr_attn = std::max(tr_attn, t.n_cp * k.census.w_att_tp);
  }
}

// Chunk c of stage i walked run by run: its kept bytes A(i,c) (§7.7), its Tr_layer candidates
// scanned from its last layer (§9.1), its attention transient; into `walk` what a twin copies.
void walk_chunk(StageActivations& a, ChunkWalk* walk, double& tr_attn, std::int64_t& seed_last_vstage,
                const PlannedChunk& pc, std::size_t c, const SideTerms& t) {
  const LayoutPlan& plan = t.plan;
  const std::int64_t u = pc.vstage;
  double& A = a.partial.chunk_bytes[c];
  std::int64_t position = pc.position;
  A = 0;
  if (walk) *walk = ChunkWalk{};
  const std::int64_t chunk_start = position;
  Recompute last_mode = t.rest_mode;
  double tr_attn_chunk = 0;
  // The chunk's layers as runs of one kind and one recompute mode (layout_plan.hpp).
  for (std::uint32_t r = pc.begin; r < pc.end; ++r) {
    const PlannedRun& R = plan.runs[r];
    const Recompute mode = R.full ? Recompute::full : t.rest_mode;
    last_mode = mode;
    const LayerActivation& act = t.run_act[R.kind][R.full ? 1 : 0];
    if (t.per_chunk_full && mode == Recompute::full) {
      a.full_layers[c][R.kind] += R.count;
      a.full_kept[c] = act.kept;
    }
    A += static_cast<double>(R.count) * act.kept;
    tr_attn = std::max(tr_attn, t.attn_tp[R.kind]);
    tr_attn_chunk = std::max(tr_attn_chunk, t.attn_tp[R.kind]);
  }
  double output_side = 0;  // kept bytes the backward frees before reaching the body layers
  if (u == 0) A += t.k_emb;
  if (u == t.nv - 1) {
    // The backward frees the logits of the head and of every MTP depth before it reaches a
    // body layer (§9.1's "K_out and MTP logits").
    output_side = t.k_out * static_cast<double>(1 + t.m.mtp_depths);
    A += output_side;
    walk_mtp(a, A, tr_attn, position, output_side, last_mode, c, t);
  }
  // §9.1: Tr_layer(ℓ) = X − K_after + Pg + Rg + Xsp, scanning from the chunk's last layer.
  // Within a run K_after grows by `kept` ≥ 0 per layer, so the run's largest candidate is
  // its last layer (the first the scan meets, which a strict > keeps on ties); were `kept`
  // negative it would be its first layer.
  double after = output_side;
  for (std::uint32_t j = pc.end; j-- > pc.begin;) {
    const PlannedRun& R = plan.runs[j];
    const LayerActivation& act = t.run_act[R.kind][R.full ? 1 : 0];
    const double steps = act.kept < 0 ? static_cast<double>(R.count - 1) : 0;
    const double base = act.working - (after + steps * act.kept);
    const std::int64_t at = act.kept < 0 ? R.first : R.first + R.count - 1;
    if (t.last_layer_only) {
      // Item 13: the stage's last body layer only; per chunk, the fully recomputed layers.
      if (j + 1 == pc.end && u > seed_last_vstage) {
        seed_last_vstage = u;
        a.seed_last[0] = act.working - after;
        a.seed_last_kind = R.kind;
        a.seed_last_at = R.first + R.count - 1;
      }
      if (t.per_chunk_tr && R.full) offer(a.chunk_tr_base[c], nullptr, nullptr, R.kind, base, 0, 0);
    } else {
      if (walk && base > walk->best[R.kind]) {
        walk->best[R.kind] = base;
        walk->best_run[R.kind] = static_cast<std::int64_t>(j - pc.begin);
        walk->best_offset[R.kind] = position - chunk_start;
      }
      offer(a.tr_base, &a.tr_at, &a.tr_order, R.kind, base, at, position++);
      if (t.per_chunk_tr) offer(a.chunk_tr_base[c], nullptr, nullptr, R.kind, base, 0, 0);
    }
    after += static_cast<double>(R.count) * act.kept;
  }
  if (walk) {
    walk->A = A;
    walk->tr_attn = tr_attn_chunk;
    if (t.per_chunk_full) {
      walk->full_layers = a.full_layers[c];
      walk->full_kept = a.full_kept[c];
    }
  }
}

// Stage i's side: its chunks walked or copied, then its in-flight peak (§8) and transients.
void stage_side(StageActivations& a, std::vector<ChunkWalk>& walks, InterleavedStateTable& states, bool counts,
                const SideTerms& t, std::int64_t i) {
  const Strategy& s = t.s;
  const PlannedStage& ps = t.plan.stages[static_cast<std::size_t>(i)];
  start_stage(a, ps, t, i);
  StageMemory& st = a.partial;
  double tr_attn = 0;
  std::int64_t seed_last_vstage = -1;
  // Without per-chunk figures the stage's repeats (layout_plan.hpp) only take their twin's bytes:
  // the other chunks are walked, in order, and the repeats copied after.
  const bool listed = t.plain && !t.last_layer_only;
  const std::int64_t walked_chunks = listed ? static_cast<std::int64_t>(ps.walk_end - ps.walk_begin) : s.vpp;
  for (std::int64_t n = 0; n < walked_chunks; ++n) {
    const std::int64_t c =
        listed ? static_cast<std::int64_t>(t.plan.walk_chunks[ps.walk_begin + static_cast<std::size_t>(n)]) : n;
    const PlannedChunk& pc = t.plan.chunk(i, c);
    if (!t.last_layer_only && pc.twin != PlannedChunk::kNoTwin) {
      copy_twin(a, tr_attn, walks[pc.twin], pc, static_cast<std::size_t>(c), t);
      continue;
    }
    // What a twin copies, when this chunk has one (filled as the chunk is walked).
    ChunkWalk* walk = pc.walked && !t.last_layer_only ? &walks[static_cast<std::size_t>(i * s.vpp + c)] : nullptr;
    walk_chunk(a, walk, tr_attn, seed_last_vstage, pc, static_cast<std::size_t>(c), t);
  }
  if (listed) {
    for (std::uint32_t k = ps.repeat_begin; k < ps.repeat_end; ++k) {
      const auto& [c, twin] = t.plan.repeat_chunks[k];
      st.chunk_bytes[c] = walks[twin].A;
    }
  }
  // §8.6: PyTorch pipelining's buffers, and A(i,c) without what they hold.
  st.pipeline_buffers = 0;
  if (holds_pipeline_stage_buffers(t.run, s)) {
    const StageBoundary b = stage_boundary(t.m, t.run, s);
    std::vector<std::int64_t>& vstages = a.vstages;
    vstages.clear();
    for (std::int64_t c = 0; c < s.vpp; ++c) {
      const std::int64_t u = t.plan.chunk(i, c).vstage;
      vstages.push_back(u);
      double& A = st.chunk_bytes[static_cast<std::size_t>(c)];
      A = std::max(0.0, A - chunk_bytes_in_stage_buffers(b, t.run, u, t.nv));  // an empty chunk keeps none
    }
    st.pipeline_buffers = pipeline_stage_buffer_bytes(b, t.run, s, vstages, t.nv);
  }
  if (rules_profile(t.run).in_flight == InFlightCounts::seed_micro_factors) {  // item 8
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
  st.tr_logits = st.head ? t.tr_logits : 0;
  st.tr_cp = st.layers + st.mtp_depths > 0 ? t.tr_cp : 0;
  st.tr_ep = a.has_moe ? t.tr_ep : 0;
}

}  // namespace

void activation_side(ActivationSide& side, std::vector<ChunkWalk>& walks, InterleavedStateTable& states,
                     const LayoutPlan& plan, KindTable* kinds_table, const Model& m, const Run& run, const Device& dev,
                     const Strategy& s, bool counts) {
  side.counts = counts;
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  std::optional<KindFigures> local;  // the kinds without a table (made only then)
  const KindFigures& kinds = kinds_of(kinds_table, local, m, run, s, n_cp);
  side.params = kinds.params;
  const SideTerms t = side_terms(m, run, dev, s, plan, kinds.kinds, n_cp);
  // Grown, never shrunk: a memo entry serves strategies of every pp in turn, and shrinking would
  // free the stages' vectors only for the next larger pp to allocate them again.
  if (side.stages.size() < static_cast<std::size_t>(s.pp)) side.stages.resize(static_cast<std::size_t>(s.pp));
  // The walked chunks' figures (layout_plan.hpp's twins), by chunk index.
  if (walks.size() < plan.chunks.size()) walks.resize(plan.chunks.size());
  for (std::int64_t i = 0; i < s.pp; ++i) {
    stage_side(side.stages[static_cast<std::size_t>(i)], walks, states, counts, t, i);
  }
}

}  // namespace meshfit::evaluator_detail
