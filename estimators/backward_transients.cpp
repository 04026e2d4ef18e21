#include "estimators/backward_transients.hpp"

#include <algorithm>
#include <limits>

#include "estimators/rank_layout.hpp"

namespace meshfit {

double logits_transient(const Run& run, const Strategy& s, double n_cp, double v_pad) {
  const RunOptions& o = run.options;
  const bool split = o.vocab_parallel_loss && s.tp > 1;
  const double vocab = o.vocab_parallel_loss ? v_pad / static_cast<double>(s.tp) : v_pad;
  return n_cp * (split ? o.loss_parallel_transient_bytes : o.loss_transient_bytes) * vocab / o.loss_chunks;
}

double cp_kv_dim(const Model& m, const Strategy& s) {
  const double tp = static_cast<double>(s.tp);
  if (m.attention == AttentionKind::mla)
    return static_cast<double>(m.heads * (2 * m.v_head_dim + m.qk_rope_dim)) / 2 / tp;
  if (m.kv_heads < m.heads) return static_cast<double>(m.kv_heads * m.head_dim) / tp;
  return static_cast<double>(m.heads * m.head_dim) / tp;
}

double cp_chunk_bytes(const Model& m, const Run& run, const Strategy& s) {
  const double kv_dim = cp_kv_dim(m, s);
  const double seq = static_cast<double>(run.seq), b = static_cast<double>(s.micro_batch);
  const double cp = static_cast<double>(s.cp);
  return s.cp_algo == CpAlgo::ulysses ? seq * b * (kv_dim / cp) * 4 : (seq / cp) * b * kv_dim * 4;
}

double cp_buffer_transient(const Model& m, const Run& run, const Strategy& s, std::int64_t D) {
  if (s.cp <= 1) return 0;
  const GroupPlacement g = place_group(s.tp, s.cp, D);  // the CP group: stride tp, size cp
  const double intra = static_cast<double>(g.inside_node ? s.cp : g.per_node);
  const double extra = g.inside_node ? intra - 1 : 2 * intra - 1;
  return extra * cp_chunk_bytes(m, run, s);
}

double ep_buffer_transient(const Model& m, const Run& run, const Strategy& s, double n_cp) {
  const RunOptions& o = run.options;
  const double rho = o.moe_mode == MoeMode::capacity ? o.capacity_factor : o.moe_imbalance;
  return (n_cp / static_cast<double>(s.sigma())) * static_cast<double>(m.top_k) * rho * static_cast<double>(m.hidden) *
         o.beta_a * (1 + static_cast<double>(s.etp));
}

double layer_transient(double base, double gathered, double reduce_buffers, double x_sp) {
  return base + gathered + reduce_buffers + x_sp;
}

LayerCandidate largest_layer_candidate(const std::array<double, 2>& base, const std::array<std::int64_t, 2>& order,
                                       const std::array<double, 2>& gathered,
                                       const std::array<double, 2>& reduce_buffers, double x_sp) {
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  LayerCandidate best{kNone, -1};
  std::int64_t best_order = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    if (base[k] == kNone) continue;
    const double tr = layer_transient(base[k], gathered[k], reduce_buffers[k], x_sp);
    if (tr > best.transient || (tr == best.transient && order[k] < best_order)) {
      best = {tr, static_cast<int>(k)};
      best_order = order[k];
    }
  }
  if (best.kind < 0) best.transient = 0;
  return best;
}

double dualpipev_transient(const std::array<double, 2>& chunk_kept, const std::array<double, 2>& chunk_layer) {
  return std::max(chunk_kept[0] + chunk_layer[1], chunk_kept[1] + chunk_layer[0]);
}

double largest_transient(double layer, double attn, double logits, double fsdp, double bucket, double cp, double ep) {
  return std::max({0.0, layer, attn, logits, fsdp, bucket, cp, ep});
}

}  // namespace meshfit
