#include "estimators/step_totals.hpp"

#include "estimators/pipeline_schedule.hpp"

namespace meshfit {

void step_from_stages(TimeReport& r, const Run& run, const Device& d, const Strategy& s, double model_flops) {
  r.slowest_stage = 0;
  r.tail_stage = 0;
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    if (r.stages[i].tau > r.stages[static_cast<std::size_t>(r.slowest_stage)].tau)
      r.slowest_stage = static_cast<std::int64_t>(i);
    if (r.stages[i].tail() > r.stages[static_cast<std::size_t>(r.tail_stage)].tail())
      r.tail_stage = static_cast<std::int64_t>(i);
  }
  const StageTime& slow = r.stages[static_cast<std::size_t>(r.slowest_stage)];
  const StageTime& last = r.stages[static_cast<std::size_t>(r.tail_stage)];
  const double m_mb = static_cast<double>(s.num_microbatches);
  // The forwards and backwards the EP overlap leaves without a partner expose what it hides.
  const double unpaired = ep_overlap_unpaired(s, r.stages);
  r.pipe = pipeline_makespan(s, r.stages) + unpaired;
  r.tail = last.tail();
  r.step = r.pipe + r.tail;
  r.forward = m_mb * slow.forward;
  r.backward = m_mb * slow.backward;
  r.recompute = m_mb * slow.recompute;
  r.comm_tp = m_mb * slow.comm_tp;
  r.comm_cp = m_mb * slow.comm_cp;
  r.comm_ep = m_mb * slow.comm_ep + unpaired;
  r.comm_pp = m_mb * slow.comm_pp;
  r.comm_zero = m_mb * slow.comm_zero;
  r.bubble = r.pipe - unpaired - m_mb * slow.tau;
  r.comm_dp = last.comm_dp;
  r.optimizer = last.optimizer;
  const double gb = static_cast<double>(run.global_batch), N = static_cast<double>(s.world());
  r.tokens_per_sec_per_device = gb * static_cast<double>(run.seq) / (r.step * N);
  r.model_flops = model_flops;
  r.mfu = r.model_flops / (r.step * N * d.peak_flops);
}

}  // namespace meshfit
