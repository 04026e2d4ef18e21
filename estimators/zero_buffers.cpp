#include "estimators/zero_buffers.hpp"

#include <algorithm>

#include "estimators/rules_profile.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

LayerStates layer_states(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, const RankParams& layer,
                         const ZeroDivisors& z) {
  const bool reshard = reshards_after_forward(run, s);
  const bool keep_gathered = s.zero == 3 && !reshard;  // §6.1
  LayerStates k;
  if (s.zero == 3 && reshard) k.gathered_params = gathered_layer_params(layer, run);
  if (rules_profile(run).layer_counts == LayerCounts::seed_counts) {
    const sapp_nd::Factors f = sapp_nd::factors(m, s, seed_rule(run, SeedConvention::expert_tp_literal));
    const sapp_nd::Counts counts = sapp_nd::counts(m, ffn, s);
    k.states = sapp_nd::layer_states(counts, f, run);
    if (keep_gathered) k.states.gathered = run.precision.beta_gather * layer.total();
    k.reduce_buffers = sapp_nd::reduced_grads(counts, f, s, run);
    k.clip = sapp_nd::grad_clip_buffer(counts, f, run);
    k.dp_comm = sapp_nd::dp_comm_elements(counts, f, s, m.is_moe());
  } else {
    k.states = model_states(layer, z, run, false, keep_gathered);
    k.reduce_buffers = reduce_scatter_buffers(layer, z, run, s);
  }
  return k;
}

double gathered_layer_params(const RankParams& layer, const Run& run) {
  const double prefetch = 1 + static_cast<double>(run.options.fsdp_prefetch_layers);
  return prefetch * run.precision.beta_gather * layer.total();
}

double reduce_scatter_buffers(const RankParams& layer, const ZeroDivisors& z, const Run& run, const Strategy& s) {
  if (s.zero < 2) return 0;
  // whole(ℓ): a part no other rank shards is not reduce-scattered.
  const double whole = run.precision.beta_red *
                       ((layer.non_expert + layer.shared) * (z.G > 1 ? 1 : 0) + layer.routed * (z.Ge > 1 ? 1 : 0));
  return whole * (run.options.overlap_grad_reduce ? 2 : 1);
}

double fsdp_gather_transient(double largest_layer_gather, bool embedding, bool head, bool tied, bool split_ends,
                             double table_params, const Run& run) {
  double tables = embedding ? 1 : 0;
  if (head && (!tied || split_ends)) tables += 1;
  const double prefetch = 1 + static_cast<double>(run.options.fsdp_prefetch_layers);
  return std::max(largest_layer_gather, tables > 0 ? prefetch * run.precision.beta_gather * table_params : 0);
}

double grad_bucket_transient(double largest_reduce_buffers, const Strategy& s, const Run& run) {
  return s.zero >= 2 ? largest_reduce_buffers : run.profile.grad_bucket_elements * run.precision.beta_G;
}

double optimizer_step_transient(const ModelStates& states, const Strategy& s, const Run& run) {
  // §17.5.8: SAPP-ND prices the end of the warm-up only; it has no optimizer-step phase.
  if (seed_rule(run, SeedConvention::no_step_phase)) return 0;
  // Megatron's fp32 copy of the shard's gradients (FrameworkProfile::step_casts_grads_to_fp32),
  // which its precision-aware optimizer does without.
  const bool casts = run.profile.step_casts_grads_to_fp32 && !run.options.precision_aware_optimizer;
  const double cast = casts && run.precision.beta_G < 4 ? 4 : 0;
  // An offloaded optimizer steps on the host: its temporaries are host memory (§6.4).
  const double per_element = s.offload == Offload::none ? run.options.optimizer_step_temp_bytes_per_param + cast : 0;
  return per_element * states.optimizer_elements +
         (s.zero == 1 || s.zero == 2 ? run.profile.allgather_bucket_elements * run.precision.beta_P : 0);
}

double deferred_grad_bytes(double unsharded_elements, const Run& run) {
  return run.precision.beta_gcomm * unsharded_elements;
}

}  // namespace meshfit
