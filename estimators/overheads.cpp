#include "estimators/overheads.hpp"

#include <algorithm>

namespace meshfit {

std::int64_t communicator_count(const Strategy& s, bool model_has_moe, const StageGroups& g) {
  std::int64_t n = 0;
  const std::int64_t dpcp = s.dp * s.cp;
  n += s.tp > 1;
  n += s.cp > 1;
  n += dpcp > 1;                                                         // gradient reduction / ZeRO shards
  n += s.zero >= 1 && s.shard_group < dpcp && dpcp / s.shard_group > 1;  // HSDP replicate group
  if (model_has_moe) {
    n += s.ep > 1;
    n += g.has_moe && s.expert_dp() > 1;  // expert data parallel, on stages with MoE layers (ruling 4)
    n += s.etp > 1 && s.etp != s.tp;
  }
  n += s.pp > 1;
  n += g.embedding_group;
  return n;
}

double device_total(double allocated, double persistent, double outside, const Device& dev, double budget) {
  const double churned = std::max(0.0, allocated - persistent);
  const double unconstrained = allocated + dev.fragmentation * churned + outside;
  const double squeezed = allocated + least_reserve_fraction(dev) * churned + outside;
  return std::min(unconstrained, std::max(squeezed, budget));
}

namespace {

double backward_additions(const StageMemory& st) {
  return st.deferred_grads + st.pipeline_buffers + st.activations + st.seed_comm + st.transient;
}

}  // namespace

double backward_phase(double static_total, double grads, bool grads_built, double rest, double end_transient) {
  if (!grads_built) return static_total + rest;
  return std::max(static_total - grads + rest, static_total + end_transient);
}

double backward_allocated(const StageMemory& st) {
  return backward_phase(st.static_total(), st.grads, st.grads_built_in_backward, backward_additions(st),
                        std::max(st.tr_fsdp, st.tr_bucket));
}

double backward_held(const StageMemory& st) { return st.static_total() + backward_additions(st); }

// PyTorch pipelining's buffers stay through the optimizer step (the next step clears them).
double step_allocated(const StageMemory& st) { return st.static_total() + st.pipeline_buffers + st.step_transient; }

double first_iteration_allocated(const StageMemory& st) {
  return std::max(backward_allocated(st) - st.optimizer_moments, step_allocated(st));
}

double stage_totals(StageMemory& st, const Device& dev, bool has_moe, double budget) {
  const double stat = st.static_total();
  const double backward = backward_allocated(st);
  const double step = step_allocated(st);
  st.step_phase_binds = step > backward;
  st.allocated = std::max(backward, step);
  const double held = std::max(backward_held(st), step);
  st.cuda_context = dev.overhead_context;
  st.communicator_buffers = static_cast<double>(st.communicators) * dev.overhead_per_communicator;
  st.workspaces = dev.overhead_workspaces;
  st.ep_library = has_moe ? dev.overhead_ep_library : 0;
  st.fixed_margin = dev.overhead_fixed;
  const double outside = st.cuda_context + st.communicator_buffers + st.workspaces + st.ep_library + st.fixed_margin +
                         st.tp_overlap_buffers;
  st.device = device_total(held, st.persistent(), outside, dev, budget);
  st.reserved = st.device - outside;
  // O_tpo grows with the micro-batch size, which the floor must not read (it is ≥ 0).
  return stat + least_reserve_fraction(dev) * (stat - st.persistent()) + st.cuda_context + st.communicator_buffers +
         st.workspaces + st.ep_library + st.fixed_margin;
}

}  // namespace meshfit
