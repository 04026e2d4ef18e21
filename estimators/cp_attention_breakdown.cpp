#include "estimators/cp_attention_breakdown.hpp"

#include "estimators/backward_transients.hpp"

namespace meshfit {

CpAttentionBreakdown cp_attention_breakdown(const Model& m, const Run& run, const Strategy& s, double comm_buffer) {
  CpAttentionBreakdown r;
  const double tp = static_cast<double>(s.tp), cp = static_cast<double>(s.cp);
  const double seq = static_cast<double>(run.seq), b = static_cast<double>(s.micro_batch);
  const double a_tp = static_cast<double>(m.heads) / tp;
  const double kv_dim = cp_kv_dim(m, s);
  r.attention_type = m.attention == AttentionKind::mla ? "mla" : m.kv_heads < m.heads ? "gqa" : "mha";
  // Scores 4 B, softmax outputs 4 B, dropout mask 1 B, K+V 4 B (the seed's constants). The ring
  // and Ulysses columns of §10 give the same numbers: (s/cp)·s = s·s/cp.
  r.kv_cache = 4 * (seq / cp) * b * kv_dim;
  r.attention_scores = 4 * (seq / cp) * seq * b * a_tp;
  r.softmax_outputs = r.attention_scores;
  r.dropout_mask = 1 * (seq / cp) * seq * b * a_tp;
  r.s2_reduction = 9 * seq * seq * b * a_tp * (cp - 1) / cp;
  r.kv_reduction = 4 * seq * b * kv_dim * (cp - 1) / cp;
  r.comm_buffer = comm_buffer;
  r.total_memory = r.kv_cache + r.attention_scores + r.softmax_outputs + r.dropout_mask + r.comm_buffer;
  r.total_reduction = r.s2_reduction + r.kv_reduction - r.comm_buffer;
  return r;
}

}  // namespace meshfit
