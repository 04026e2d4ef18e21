#include "estimators/attention_head_width.hpp"

namespace meshfit {

AttentionWidthScale attention_width_scale(const Model& m, const Device& d) {
  AttentionWidthScale s;
  if (d.tensor_flops_per_exp <= 0) return s;
  const double y = kExponentialsPerScore * d.tensor_flops_per_exp;
  const double dqk = static_cast<double>(m.qk_head_dim()), dv = static_cast<double>(m.v_dim());
  const double m_f = 2 * (dqk + dv), m_b = 6 * dqk + 4 * dv;
  s.forward = (1 + y / m_f) / (1 + y / 512);
  s.backward = (1 + y / m_b) / (1 + y / 1280);
  return s;
}

}  // namespace meshfit
