#include "estimators/pipeline_hops.hpp"

#include "estimators/collectives.hpp"

namespace meshfit {

bool pipeline_hops_hidden(const Run& run, const Strategy& s) {
  const RunOptions& o = run.options;
  return o.pp_overlap || (s.schedule == Schedule::dualpipev && o.dualpipe_overlap) ||
         (s.schedule == Schedule::interleaved_1f1b && run.profile.interleaved_p2p_overlap);
}

double pipeline_hop_time(const Model& m, const Run& run, const Device& d, const Strategy& s) {
  if (s.pp <= 1 || pipeline_hops_hidden(run, s)) return 0;
  const std::int64_t world = s.world();
  const std::int64_t D = d.placement_domain();
  const bool inside = world <= D && D % world == 0;
  const double S = static_cast<double>(s.micro_batch) * (static_cast<double>(run.seq) / static_cast<double>(s.cp)) *
                   static_cast<double>(m.hidden) * run.options.beta_a / static_cast<double>(s.sigma());
  return 2 * static_cast<double>(s.vpp) * point_to_point(d, inside, S);
}

}  // namespace meshfit
