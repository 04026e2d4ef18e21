#include "estimators/pipeline_schedule.hpp"

#include <algorithm>

namespace meshfit {

double pipeline_makespan(const Strategy& s, const std::vector<StageTime>& st) {
  const double m = static_cast<double>(s.num_microbatches);
  double sum = 0, max_tau = 0;
  std::size_t slowest = 0;
  for (std::size_t i = 0; i < st.size(); ++i) {
    sum += st[i].tau;
    if (st[i].tau > max_tau) {
      max_tau = st[i].tau;
      slowest = i;
    }
  }
  if (s.pp == 1) return m * st[0].tau;
  const double pp = static_cast<double>(s.pp), v = static_cast<double>(s.vpp);
  switch (s.schedule) {
    case Schedule::interleaved_1f1b:  // warm-up and cool-down in chunk times: (pp − 1)·τ/v
      return sum / v + (m * v - 1) * max_tau / v;
    case Schedule::zb_h1: {  // Qi et al.: the weight-gradient passes fill the bubble
      double min_w = st[0].weight_grad;
      for (const auto& x : st) min_w = std::min(min_w, x.weight_grad);
      return std::max(sum + (m - 1) * max_tau - 2 * (pp - 1) * min_w, m * max_tau);
    }
    case Schedule::dualpipev: {  // DualPipe: (PP/2 − 1)(F&B + B − 3W) with chunk times halved
      const StageTime& x = st[slowest];
      return m * max_tau + (pp - 1) * (x.forward + 2 * x.backward - 3 * x.weight_grad) / 2;
    }
    default:  // 1F1B and GPipe: Σ τ_i + (m − 1)·max τ_i
      return sum + (m - 1) * max_tau;
  }
}

double ep_overlap_unpaired(const Strategy& s, const std::vector<StageTime>& stages) {
  if (s.pp == 1) return stages.empty() ? 0 : stages[0].ep_hidden;
  const double pp = static_cast<double>(s.pp), v = static_cast<double>(s.vpp);
  const double chunks = static_cast<double>(s.num_microbatches) * v;
  double worst = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const double later = pp - static_cast<double>(i) - 1;  // the stages after this one
    const double usual = s.schedule == Schedule::interleaved_1f1b ? 2 * later + (v - 1) * pp : later;
    const double warmup = std::min(chunks, usual + 1);
    worst = std::max(worst, warmup / v * stages[i].ep_hidden);
  }
  return worst;
}

}  // namespace meshfit
