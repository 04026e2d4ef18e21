#include "estimators/reference_memory.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "estimators/activation_census.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/grad_clip.hpp"
#include "estimators/host_memory.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/model_states.hpp"
#include "estimators/overheads.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/pipeline_layout.hpp"
#include "estimators/pipeline_stage_buffers.hpp"
#include "estimators/rules_profile.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/sapp_nd_stage.hpp"
#include "estimators/sapp_nd_tables.hpp"
#include "estimators/seed_conventions.hpp"
#include "estimators/strategy_rules.hpp"
#include "estimators/tp_overlap_buffers.hpp"
#include "estimators/zero_buffers.hpp"

namespace meshfit {

namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

// One layer kind (dense or MoE FFN) under the strategy: what each of its layers keeps and works
// per micro-batch by recompute mode (§7.2), its per-rank parameters (§4.9) and their model states
// and ZeRO/FSDP buffers (§6, §9.1's Pg and Rg).
struct LayerKind {
  CensusPerToken census;
  std::array<LayerActivation, 3> by_mode{};  // index: Recompute's value (layer_activations.hpp)
  RankParams params;
  ModelStates states;
  double gathered_params = 0;    // Pg: its own and the prefetched layers' gathered parameters
  double reduce_buffers = 0;     // Rg: its gradients as produced and reduce-scattered
  double clip = 0, dp_comm = 0;  // --rules sapp-nd: gradient-clipping buffer and DP comm (§17.3)
};

// What the whole estimate reads of (model, run, strategy): the layer kinds and the ends' terms.
struct Terms {
  const RulesProfile* rules = nullptr;  // --rules: the variants of the seed's terms
  double h = 0, n_cp = 0;
  double x_sp = 0;             // Xsp of §9.1
  double seed_full_input = 0;  // item 9: the seed keeps a full layer's input for the whole sequence
  Recompute rest_mode = Recompute::none;
  std::array<LayerKind, 2> kinds;  // index: 0 dense, 1 MoE
  std::size_t mtp_kind = 0;
  double k_emb = 0, k_out = 0, tr_logits = 0, tr_cp = 0, tr_ep = 0;
  // ZeRO / FSDP (§6.1).
  ZeroDivisors z;
  bool gather_per_layer = false, keep_gathered = false;
  double table_params = 0;
  ModelStates embedding_states, vocab_states, final_norm_states, mtp_extra_states;
  double embedding_total = 0, vocab_total = 0, final_norm_total = 0;
  bool split_ends = false;
};

LayerKind layer_kind(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, const Terms& t, double g_kv) {
  LayerKind k;
  k.params = layer_rank_params(m, s, ffn);
  const KindActivation activation = kind_activation(m, run, s, ffn, t.n_cp, g_kv);
  k.census = activation.census;
  k.by_mode = activation.by_mode;
  // Model states and buffers (§6, §9.1), the seed's own counts under its rules (§17.3).
  const LayerStates zero = layer_states(m, run, s, ffn, k.params, t.z);
  k.states = zero.states;
  k.gathered_params = zero.gathered_params;
  k.reduce_buffers = zero.reduce_buffers;
  k.clip = zero.clip;
  k.dp_comm = zero.dp_comm;
  return k;
}

Terms terms(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s, const PipelineLayout& layout) {
  Terms t;
  const RunOptions& o = run.options;
  t.rules = &rules_profile(run);
  t.h = static_cast<double>(m.hidden);
  t.n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  t.x_sp = sp_gathered_input(m, run, s);
  if (t.rules->full_layer_kept == FullLayerKept::whole_sequence_input)
    t.seed_full_input = sapp_nd::full_layer_input(m, run, s);
  t.rest_mode = s.recompute == Recompute::full ? o.recompute_rest : s.recompute;
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));

  const bool reshard = reshards_after_forward(run, s);
  t.z = zero_divisors(s, run);
  t.gather_per_layer = s.zero == 3 && reshard;
  t.keep_gathered = s.zero == 3 && !reshard;

  const double g_kv = t.rules->gathered_kv(m, run, s);
  t.kinds[0] = layer_kind(m, run, s, FfnKind::dense, t, g_kv);
  t.kinds[1] = m.is_moe() ? layer_kind(m, run, s, FfnKind::moe, t, g_kv) : t.kinds[0];
  t.mtp_kind = !m.layer_ffn.empty() && m.layer_ffn.back() == FfnKind::moe ? 1 : 0;

  // The ends of the model (§7.7), the output layer from its own measured record when it has one.
  t.k_emb = embedding_kept(m, run, s, t.n_cp);
  const OutputActivation output = output_activation(m, run, s, t.n_cp, v_pad);
  t.k_out = output.kept;
  t.tr_logits = output.logits;
  t.tr_cp = t.rules->cp_buffer(m, run, s, cluster.device.placement_domain());
  t.tr_ep = m.is_moe() ? ep_buffer_transient(m, run, s, t.n_cp) : 0;

  // The ends' parameters and states (§4.7, §4.8, §5.3).
  const EndParams ends = end_params(m, run, s);
  t.table_params = ends.table;
  t.embedding_states = model_states(ends.embedding, t.z, run, true, t.keep_gathered);
  t.vocab_states = model_states(ends.vocab, t.z, run, true, t.keep_gathered);
  t.final_norm_states = model_states(ends.final_norm, t.z, run, false, t.keep_gathered);
  t.mtp_extra_states = model_states(ends.mtp_extra, t.z, run, false, t.keep_gathered);
  if (seed_rule(run, SeedConvention::table_shard)) {  // §17.5.4
    const sapp_nd::TableStates seed = sapp_nd::table_states(m, run, s);
    t.embedding_states = seed.embedding;
    t.vocab_states = seed.output;
    t.mtp_extra_states = seed.mtp_extra;
  }
  t.embedding_total = ends.embedding.total();
  t.vocab_total = ends.vocab.total();
  t.final_norm_total = ends.final_norm.total();
  t.split_ends = layout.vstages.front().stage != layout.head_stage;
  return t;
}

// One layer's activation figures: a fully recomputed layer's, or the rest's mode.
LayerActivation activation(const Terms& t, std::size_t kind, bool full) {
  LayerActivation a = t.kinds[kind].by_mode[static_cast<std::size_t>(full ? Recompute::full : t.rest_mode)];
  if (full && t.rules->full_layer_kept == FullLayerKept::whole_sequence_input) a.kept = t.seed_full_input;
  return a;
}

// §9.1's backward candidates X − K_after (Pg + Rg + Xsp are added per kind at the end): the largest
// per kind, the first met in the stage's scan on ties, with the layer it is at.
struct Candidates {
  std::array<double, 2> best{kNone, kNone};
  std::array<std::int64_t, 2> at{-1, -1}, order{0, 0};
  void offer(std::size_t kind, double base, std::int64_t layer, std::int64_t position) {
    if (base > best[kind]) {
      best[kind] = base;
      at[kind] = layer;
      order[kind] = position;
    }
  }
};

// What one chunk of a stage holds and offers.
struct ChunkFigures {
  double kept = 0;                            // A(i,c): bytes one micro-batch keeps in the chunk (§7.7)
  std::array<double, 2> best{kNone, kNone};   // its own largest candidate per kind (DualPipeV, §9.8)
  std::array<std::int64_t, 2> full_layers{};  // fully recomputed layers per kind (§9.9)
  std::array<double, 2> full_kept{};          // what each such layer keeps, per kind
  double unsharded = 0;                       // its parameters' unsharded elements (ruling 10)
};

// What the walk of a stage's chunks finds besides the stage's own fields.
struct StageWalk {
  Candidates cand;
  std::vector<ChunkFigures> chunks;
  ModelStates states;
  std::array<bool, 2> present{};  // layer kinds met (dense, MoE)
  int last_kind = -1;             // the stage's last body layer's kind
  int seed_last_kind = -1;        // item 13: the seed's last layer (kind and base)
  double seed_last = 0;
};

// The stage's chunks, forward (kept bytes, model states) and backward (the Tr_layer candidates).
void walk_stage(StageMemory& st, StageWalk& w, const Model& m, const Run& run, const Strategy& s,
                const PipelineLayout& layout, const Terms& t) {
  Candidates& cand = w.cand;
  ModelStates& states = w.states;
  std::array<bool, 2>& present = w.present;
  w.chunks.assign(static_cast<std::size_t>(s.vpp), ChunkFigures{});
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  std::int64_t position = 0;  // candidates in the order the backward scan meets them
  std::int64_t seed_last_vstage = -1;
  for (std::int64_t c = 0; c < s.vpp; ++c) {
    const std::int64_t u = layout.vstage_of(st.stage, c);
    const VirtualStage& vs = layout.vstages[static_cast<std::size_t>(u)];
    ChunkFigures& ch = w.chunks[static_cast<std::size_t>(c)];
    const double unsharded_before = states.unsharded_elements;
    st.layers += vs.layers;
    st.full_recompute += vs.full_recompute;
    // Forward: each layer's kept bytes and model states (§6, §7).
    for (std::int64_t l = 0; l < vs.layers; ++l) {
      const std::size_t kind = m.layer_ffn[static_cast<std::size_t>(vs.first_layer + l)] == FfnKind::moe ? 1 : 0;
      const bool full = s.recompute == Recompute::full && l < vs.full_recompute;
      const LayerActivation a = activation(t, kind, full);
      ch.kept += a.kept;
      if (full) {
        ++ch.full_layers[kind];
        ch.full_kept[kind] = a.kept;
      }
      st.tr_attn = std::max(st.tr_attn, t.n_cp * t.kinds[kind].census.w_att_tp);
      states += t.kinds[kind].states;
      present[kind] = true;
      w.last_kind = static_cast<int>(kind);
    }
    double output_side = 0;  // kept bytes the backward frees before it reaches a body layer
    if (u == 0) {
      st.embedding = true;
      ch.kept += t.k_emb;
      states += t.embedding_states;
    }
    const bool last_vstage = u == nv - 1;
    LayerActivation mtp_act;
    double mtp_kept = 0;
    if (last_vstage) {
      st.head = true;
      st.mtp_depths = m.mtp_depths;
      if (!m.tie) states += t.vocab_states;
      if ((m.tie || m.mtp_depths > 0) && t.split_ends) states += t.vocab_states;
      states += t.final_norm_states;
      // The logits of the head and of every MTP depth (§9.1's "K_out and MTP logits").
      output_side = t.k_out * static_cast<double>(1 + m.mtp_depths);
      ch.kept += output_side;
      // An MTP depth (§4.8, §7.7) is a body layer of the last layer's kind in the mode the
      // chunk's last layer takes, plus eh_proj and norms: it keeps its two inputs and their
      // concatenation (3h) besides its layer's K_1.
      const bool last_full = s.recompute == Recompute::full && vs.layers > 0 && vs.full_recompute >= vs.layers;
      const Recompute last_mode = last_full ? Recompute::full : t.rest_mode;
      mtp_act = t.kinds[t.mtp_kind].by_mode[static_cast<std::size_t>(last_mode)];
      mtp_kept = mtp_depth_kept(mtp_act, t.n_cp, m, run, s);
      for (std::int64_t d = 0; d < m.mtp_depths; ++d) {
        ch.kept += mtp_kept;
        states += t.kinds[t.mtp_kind].states;
        states += t.mtp_extra_states;
        present[t.mtp_kind] = true;
      }
    }
    // Backward, from the chunk's end: the MTP depths, then the body layers last to first.
    for (std::int64_t d = 0; last_vstage && d < m.mtp_depths; ++d) {
      const double after = output_side + mtp_kept * static_cast<double>(m.mtp_depths - 1 - d);
      const double base = mtp_act.working - after;
      cand.offer(t.mtp_kind, base, m.layers + d, position++);
      ch.best[t.mtp_kind] = std::max(ch.best[t.mtp_kind], base);
      st.tr_attn = std::max(st.tr_attn, t.n_cp * t.kinds[t.mtp_kind].census.w_att_tp);
    }
    double after = output_side;
    for (std::int64_t l = vs.layers; l-- > 0;) {
      const std::int64_t layer = vs.first_layer + l;
      const std::size_t kind = m.layer_ffn[static_cast<std::size_t>(layer)] == FfnKind::moe ? 1 : 0;
      const bool full = s.recompute == Recompute::full && l < vs.full_recompute;
      const LayerActivation a = activation(t, kind, full);
      const double base = a.working - after;
      if (t.rules->layer_transient == LayerTransientRule::stage_last_layer) {
        // Item 13: the seed prices the stage's last body layer only (of its last virtual stage);
        // per chunk (DualPipeV), its fully recomputed layers.
        if (l == vs.layers - 1 && u > seed_last_vstage) {
          seed_last_vstage = u;
          w.seed_last = base;
          w.seed_last_kind = static_cast<int>(kind);
          st.tr_layer_at = layer;
        }
        if (full) ch.best[kind] = std::max(ch.best[kind], base);
      } else {
        cand.offer(kind, base, layer, position++);
        ch.best[kind] = std::max(ch.best[kind], base);
      }
      after += a.kept;
    }
    ch.unsharded = states.unsharded_elements - unsharded_before;
  }
}

// §6: model states; FSDP2 keeps the root module and torchtitan the last block gathered; ruling
// 10's deferred gradients.
void stage_model_states(StageMemory& st, const StageWalk& w, const Model& m, const Run& run, const Strategy& s,
                        const Terms& t) {
  const ModelStates& states = w.states;
  st.weights = states.weights;
  st.grads = states.grads;
  st.grads_built_in_backward = grads_built_in_backward(run, s);
  st.optimizer = states.optimizer;
  st.optimizer_moments = optimizer_moments(states, run);
  st.gathered = states.gathered;
  st.fp8_cache = states.fp8_cache;
  st.host = states.host;
  const bool root_held = run.profile.fsdp_root_and_last_block_unsharded;
  if (t.gather_per_layer && (root_held || run.profile.fsdp_output_group_unsharded)) {
    // Either FSDP2's root (tables, final norm) and torchtitan's last block stay gathered, or only
    // torchtitan's [norm, output] group (with a tied table, the table grouped with them).
    double held = 0;
    if (root_held && w.last_kind >= 0) held += t.kinds[static_cast<std::size_t>(w.last_kind)].params.total();
    if (st.embedding && (root_held || (m.tie && st.head && !t.split_ends))) held += t.embedding_total;
    if (st.head) {
      if (!m.tie) held += t.vocab_total;
      if ((m.tie || m.mtp_depths > 0) && t.split_ends) held += t.vocab_total;
      held += t.final_norm_total;
    }
    st.gathered += run.precision.beta_gather * held;
  }
  // Ruling 10: deferred gradient sync holds the gradients unsharded through the backward, a
  // chunk's at a time where its backwards run together.
  if (defers_grad_sync(run, s)) {
    double elements = states.unsharded_elements;
    if (defers_chunk_by_chunk(run, s)) {
      elements = 0;
      for (const ChunkFigures& ch : w.chunks) elements = std::max(elements, ch.unsharded);
    }
    st.deferred_grads = deferred_grad_bytes(elements, run);
  }
}

// §8.6: PyTorch pipelining's buffers, and A(i,c) without what they hold.
void stage_pipeline_buffers(StageMemory& st, const Model& m, const Run& run, const Strategy& s,
                            const PipelineLayout& layout) {
  const StageBoundary b = stage_boundary(m, run, s);
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  std::vector<std::int64_t> vstages;
  for (std::int64_t c = 0; c < s.vpp; ++c) {
    const std::int64_t u = layout.vstage_of(st.stage, c);
    vstages.push_back(u);
    double& A = st.chunk_bytes[static_cast<std::size_t>(c)];
    A = std::max(0.0, A - chunk_bytes_in_stage_buffers(b, run, u, nv));  // an empty chunk keeps none
  }
  st.pipeline_buffers = pipeline_stage_buffer_bytes(b, run, s, vstages, nv);
}

// §8: the micro-batches in flight per chunk (item 8: the seed's own factors), and §9.9's
// gradient-clipping copy of a fully recomputed layer's gradients, where it is larger than the
// layer's in-flight inputs (the seed's, or grad_clip_model: seed).
void stage_activations(StageMemory& st, const StageWalk& w, const Run& run, const Strategy& s, const Terms& t,
                       std::int64_t i) {
  if (t.rules->in_flight == InFlightCounts::seed_micro_factors) {
    st.chunk_inflight = sapp_nd::micro_factors(s, i);
    for (std::size_t c = 0; c < st.chunk_inflight.size(); ++c) {
      st.activations += static_cast<double>(st.chunk_inflight[c]) * st.chunk_bytes[c];
    }
  } else {
    const InFlight f = in_flight(s, i, st.chunk_bytes);
    st.activations = f.peak;
    st.chunk_inflight = f.counts;
  }
  if (!grad_clip_adjusts(run)) return;
  for (std::size_t c = 0; c < w.chunks.size(); ++c) {
    const double n = static_cast<double>(st.chunk_inflight[c]);
    for (std::size_t k = 0; k < 2; ++k) {
      const std::int64_t count = w.chunks[c].full_layers[k];
      if (count == 0) continue;
      const LayerKind& kind = t.kinds[k];
      const double fwd = n * w.chunks[c].full_kept[k];
      const bool seed_counts = t.rules->layer_counts == LayerCounts::seed_counts;
      const double copy = seed_counts ? kind.clip : grad_clip_copy(kind.params, t.z, run);
      const double dpc = seed_counts ? kind.dp_comm : grad_clip_dp_comm(kind.params, s, run);
      st.activations += static_cast<double>(count) * grad_clip_addition(fwd, copy, dpc);
    }
  }
}

// §9: the transients, and §9.9's optimizer-step phase.
void stage_transients(StageMemory& st, const StageWalk& w, bool has_moe, const Model& m, const Run& run,
                      const Strategy& s, const Terms& t) {
  const std::array<double, 2> pg{t.kinds[0].gathered_params, t.kinds[1].gathered_params};
  const std::array<double, 2> rg{t.kinds[0].reduce_buffers, t.kinds[1].reduce_buffers};
  if (t.rules->layer_transient == LayerTransientRule::stage_last_layer) {
    if (w.seed_last_kind >= 0) {
      const auto k = static_cast<std::size_t>(w.seed_last_kind);
      st.tr_layer = layer_transient(w.seed_last, pg[k], rg[k], t.x_sp);
    }
  } else {
    const LayerCandidate best = largest_layer_candidate(w.cand.best, w.cand.order, pg, rg, t.x_sp);
    st.tr_layer = best.transient;
    if (best.kind >= 0) st.tr_layer_at = w.cand.at[static_cast<std::size_t>(best.kind)];
  }
  double max_pg = 0, max_rg = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    if (!w.present[k]) continue;
    max_pg = std::max(max_pg, t.kinds[k].gathered_params);
    max_rg = std::max(max_rg, t.kinds[k].reduce_buffers);
  }
  if (t.gather_per_layer) {
    st.tr_fsdp = fsdp_gather_transient(max_pg, st.embedding, st.head, m.tie, t.split_ends, t.table_params, run);
  }
  st.tr_bucket = grad_bucket_transient(max_rg, s, run);
  st.tr_logits = st.head ? t.tr_logits : 0;
  st.tr_cp = st.layers + st.mtp_depths > 0 ? t.tr_cp : 0;
  st.tr_ep = has_moe ? t.tr_ep : 0;
  double layer_candidate = st.tr_layer;
  if (s.schedule == Schedule::dualpipev && s.vpp == 2) {  // §9.8: the two chunks overlap
    const std::array<double, 2> chunk_layer{
        largest_layer_candidate(w.chunks[0].best, {0, 0}, pg, rg, t.x_sp).transient,
        largest_layer_candidate(w.chunks[1].best, {0, 0}, pg, rg, t.x_sp).transient};
    st.tr_dpv = dualpipev_transient({st.chunk_bytes[0], st.chunk_bytes[1]}, chunk_layer);
    layer_candidate = st.tr_dpv;
  }
  st.transient =
      largest_transient(layer_candidate, st.tr_attn, st.tr_logits, st.tr_fsdp, st.tr_bucket, st.tr_cp, st.tr_ep);
  st.step_transient = optimizer_step_transient(w.states, s, run);
}

}  // namespace

MemoryReport reference_memory(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s,
                              double headroom_bytes) {
  // --rules sapp-nd: the seed's own device overheads (§17.3).
  const Device dev = profile_device(rules_profile(run), cluster.device);
  const PipelineLayout layout = make_layout(m, run, s);
  Terms t = terms(m, run, cluster, s, layout);
  const double tp_overlap = tp_overlap_buffer_bytes(m, run, s);  // the same on every stage
  MemoryReport report;
  report.capacity = dev.capacity;
  report.budget = dev.capacity - headroom_bytes;
  for (std::int64_t i = 0; i < s.pp; ++i) {
    StageMemory st;
    st.stage = i;
    StageWalk w;
    walk_stage(st, w, m, run, s, layout, t);
    const bool has_moe = w.present[1] && m.is_moe();
    for (const ChunkFigures& ch : w.chunks) st.chunk_bytes.push_back(ch.kept);
    if (holds_pipeline_stage_buffers(run, s)) stage_pipeline_buffers(st, m, run, s, layout);
    stage_model_states(st, w, m, run, s, t);
    stage_activations(st, w, run, s, t, i);
    stage_transients(st, w, has_moe, m, run, s, t);
    sapp_nd::apply_seed_stage(st, m, run, s, layout, st.chunk_inflight);  // §17.5 (sapp-nd only)
    // §11: totals.
    const StageGroups groups{has_moe, (m.tie || m.mtp_depths > 0) && t.split_ends && (st.embedding || st.head)};
    st.communicators = communicator_count(s, m.is_moe(), groups);
    st.tp_overlap_buffers = tp_overlap;
    report.static_floor = std::max(report.static_floor, stage_totals(st, dev, has_moe, report.budget));
    if (i == 0 || st.device > report.peak) {
      report.peak = st.device;
      report.peak_stage = i;
    }
    report.stages.push_back(std::move(st));
  }
  // --fit-margin: the peak with the margin of its family must fit (RunOptions::fit_factor).
  report.fits = report.peak * run.options.fit_factor_for(s.recompute) <= report.budget;
  double host = 0;
  for (const StageMemory& st : report.stages) host = std::max(host, st.host);
  apply_host_budget(report, host, dev, s);
  return report;
}

}  // namespace meshfit
