#include "estimators/rotary_kernels.hpp"

namespace meshfit {

bool megatron_rotary_unfused(const Model& m, const RunOptions& o) {
  if (m.attention == AttentionKind::mla) return !o.rope_fusion;
  return m.rope_attention_factor != 1.0;
}

double rotated_elements_per_token(const Model& m, const Strategy& s) {
  const bool mla = m.attention == AttentionKind::mla;
  const double heads = static_cast<double>(m.heads + (mla ? m.heads : m.kv_heads));
  const double width = static_cast<double>(mla ? m.qk_rope_dim : m.head_dim);
  return heads * width / static_cast<double>(s.tp);
}

RotaryPasses megatron_rotary_passes(const Model& m, bool unfused) {
  if (!unfused) return RotaryPasses{2, 4};
  return m.attention == AttentionKind::mla ? RotaryPasses{14, 24} : RotaryPasses{12, 17};
}

}  // namespace meshfit
