#include "estimators/backward_transients.hpp"

#include <algorithm>
#include <limits>

#include "estimators/rank_layout.hpp"

namespace meshfit {

double logits_transient(const Run& run, const Strategy& s, double n_cp, double v_pad) {
  const RunOptions& o = run.options;
  // Transformer Engine's cross-entropy writes the gradient in place, into the kept logits.
  if (o.te_cross_entropy) return 0;
  const bool split = o.vocab_parallel_loss && s.tp > 1;
  const double vocab = o.vocab_parallel_loss ? v_pad / static_cast<double>(s.tp) : v_pad;
  // torch.compile fuses the loss's backward (softmax minus the one-hot target, times the
  // incoming gradient) into one kernel that writes the logits' gradient once, in their dtype.
  const double per_logit = o.compiled_loss ? o.beta_a
                           : split         ? o.loss_parallel_transient_bytes
                                           : o.loss_transient_bytes;
  return n_cp * per_logit * vocab / o.loss_chunks;
}

double cp_kv_dim(const Model& m, const Strategy& s) {
  const double tp = static_cast<double>(s.tp);
  if (m.attention == AttentionKind::mla)
    return static_cast<double>(m.heads * (2 * m.v_head_dim + m.qk_rope_dim)) / 2 / tp;
  if (m.kv_heads < m.heads) return static_cast<double>(m.kv_heads * m.head_dim) / tp;
  return static_cast<double>(m.heads * m.head_dim) / tp;
}

double cp_chunk_bytes(const Model& m, const Run& run, const Strategy& s) {
  // K and V expanded to the query heads before the attention (RunOptions::repeat_kv_heads) are
  // what the exchange moves.
  const bool repeated = run.options.repeat_kv_heads && m.attention != AttentionKind::mla;
  const double kv_dim =
      repeated ? static_cast<double>(m.heads * m.head_dim) / static_cast<double>(s.tp) : cp_kv_dim(m, s);
  const double seq = static_cast<double>(run.seq), b = static_cast<double>(s.micro_batch);
  const double cp = static_cast<double>(s.cp);
  return s.cp_algo == CpAlgo::ulysses ? seq * b * (kv_dim / cp) * 4 : (seq / cp) * b * kv_dim * 4;
}

double cp_buffer_transient(const Model& m, const Run& run, const Strategy& s, std::int64_t D) {
  if (s.cp <= 1) return 0;
  // All-gather CP gathers every rank's chunk at once and attends over the whole buffer: PyTorch's
  // _AllGatherRotater (torch/distributed/tensor/experimental/_attention.py) all-gathers the
  // concatenated K and V in one call, Transformer Engine's AttnFuncWithCPAndKVAllGather the whole
  // sequence's K and V (pytorch/attention/dot_product_attention/context_parallel.py).
  if (s.cp_algo == CpAlgo::allgather) return static_cast<double>(s.cp - 1) * cp_chunk_bytes(m, run, s);
  const GroupPlacement g = place_group(s.tp, s.cp, D);  // the CP group: stride tp, size cp
  const double intra = static_cast<double>(g.inside_node ? s.cp : g.per_node);
  const double extra = g.inside_node ? intra - 1 : 2 * intra - 1;
  return extra * cp_chunk_bytes(m, run, s);
}

double ep_buffer_transient(const Model& m, const Run& run, const Strategy& s, double n_cp) {
  const RunOptions& o = run.options;
  const double rho = routed_load_factor(o);
  return (n_cp / static_cast<double>(s.sigma())) * static_cast<double>(m.top_k) * rho * static_cast<double>(m.hidden) *
         o.beta_a * (1 + static_cast<double>(s.etp));
}

double sp_gathered_input(const Model& m, const Run& run, const Strategy& s) {
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  return s.tp > 1 && s.sp ? n_cp * run.options.beta_a * static_cast<double>(m.hidden) : 0;
}

}  // namespace meshfit
