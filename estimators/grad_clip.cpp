#include "estimators/grad_clip.hpp"

#include "estimators/rules_profile.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

bool grad_clip_adjusts(const Run& run) {
  // §17.5.6: SAPP-ND's configs_eval/default.yaml prices a FULL_REC_LAYER with fullrec_layer_activ,
  // never EvalBody.fullrec_layer_activ_gradclip: as shipped, the clipping case does not apply.
  if (seed_rule(run, SeedConvention::no_clip_case)) return false;
  return run.options.grad_clip && (rules_profile(run).clip_copy_always || run.options.grad_clip_seed);
}

double grad_clip_copy(const RankParams& layer, const ZeroDivisors& z, const Run& run) {
  return run.precision.beta_state * ((layer.non_expert + layer.shared) / z.OS + layer.routed / z.OSe);
}

double grad_clip_dp_comm(const RankParams& layer, const Strategy& s, const Run& run) {
  return s.zero == 3 ? run.precision.beta_gather * layer.total() : 0;
}

double grad_clip_addition(double fwd, double copy, double dp_comm) {
  const double kept = fwd + dp_comm > copy ? fwd : copy;
  return kept + (kept > 0 ? dp_comm : 0) - fwd;
}

}  // namespace meshfit
