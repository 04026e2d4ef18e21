#include "estimators/tp_overlap_buffers.hpp"

namespace meshfit {

double tp_overlap_buffer_bytes(const Model& m, const Run& run, const Strategy& s) {
  if (!s.tp_comm_overlap) return 0;
  const double n = static_cast<double>(s.micro_batch) * static_cast<double>(run.seq) / static_cast<double>(s.cp);
  const double h = static_cast<double>(m.hidden);
  if (run.profile.framework == Framework::torchtitan) {
    return 2 * n / static_cast<double>(s.tp) * h * run.options.beta_a;
  }
  // Transformer Engine's buffers are bf16 (initialize_ub's dtype), the all-gather ones FP8 bytes
  // when the linears run in FP8.
  const double all_gather_bytes = run.options.fp8_linears ? 1 : 2;
  return n * h * (8 * all_gather_bytes + 4 * 2);
}

}  // namespace meshfit
