#include "estimators/model.hpp"

#include <algorithm>

namespace meshfit {

const MeasuredCensus* Model::census_for(const std::string& kind) const {
  for (const auto& c : measured_census) {
    if (c.kind == kind) return &c;
  }
  return nullptr;
}

// symbols.md §4: d_qk = d_v = d_h without MLA; d_qk = d_nope + d_rope, d_v = v_head_dim with MLA.
std::int64_t Model::qk_head_dim() const {
  return attention == AttentionKind::mla ? qk_nope_dim + qk_rope_dim : head_dim;
}
std::int64_t Model::v_dim() const { return attention == AttentionKind::mla ? v_head_dim : head_dim; }

}  // namespace meshfit
