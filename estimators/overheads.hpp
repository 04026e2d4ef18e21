// Memory outside the allocator (docs/spec/memory-model.md §11): communicators a rank of a
// stage takes part in, and the device's fixed overheads.
#pragma once

#include <cstdint>

#include "estimators/device.hpp"
#include "estimators/memory_report.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct StageGroups {
  bool has_moe = false;          // the stage holds an MoE layer
  bool embedding_group = false;  // the stage is one end of a tied-table or MTP embedding group
};

// n_comm(i): one communicator per group of more than one rank (§11's table).
std::int64_t communicator_count(const Strategy& s, bool model_has_moe, const StageGroups& g);

// φ_min: the least reserve per byte the step allocates and frees, what a stage squeezed by its
// budget keeps (never more than the unconstrained φ).
inline double least_reserve_fraction(const Device& dev) {
  return dev.fragmentation_floor < dev.fragmentation ? dev.fragmentation_floor : dev.fragmentation;
}

// §11: M_device from M_alloc, the part of it kept from step to step (`persistent`, the model
// states: StageMemory::persistent) and the memory outside the allocator (`outside`), against the
// budget (capacity − headroom). The allocator's reserve above M_alloc is a share φ of what the step
// allocates and frees, M_alloc − persistent: model states are allocated once, before the first
// step, and never freed, so no free block is left among them. Unconstrained the allocator reserves
// M_alloc + φ·(M_alloc − persistent); when that does not fit, it releases its cached segments and
// serves M_alloc from what is left, down to φ_min (Device::fragmentation_floor): the device total
// is then the budget itself.
double device_total(double allocated, double persistent, double outside, const Device& dev, double budget);

// §11's totals of a stage whose terms are set (model states, deferred gradients, activations,
// transient, step transient, communicators, O_tpo): M_alloc (the backward or the optimizer-step phase),
// M_reserved, the overheads outside the allocator and M_device. Returns the stage's static floor
// (its model states in place of M_alloc, at φ_min), the search's ZeRO-setting bound.
double stage_totals(StageMemory& st, const Device& dev, bool has_moe, double budget);

// The backward phase's allocated peak from its parts: the static total (gradients `grads` among
// them), what the backward adds at its start (`rest`: activations, transients, deferred gradients,
// pipeline buffers) and at its end (`end_transient`: the last reduction's buffers). When the step
// began with no gradient (grads_built_in_backward), each layer's gradient appears as its
// activations are freed, so the sum is largest at one end: at the start, every activation and no
// gradient; at the end, every gradient and no activation. Otherwise the gradients are there all along.
double backward_phase(double static_total, double grads, bool grads_built, double rest, double end_transient);

// M_alloc's two phases of a stage whose terms are set: the backward's and the optimizer step's.
double backward_allocated(const StageMemory& st);
// What the allocator's segments hold in the backward phase: the backward's allocated peak, and when
// the step began with no gradient, the gradients' segments too. FSDP2 allocates each reduced
// gradient on its reduce-scatter stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
// foreach_reduce: the sharded gradient is a view of `reduce_output`, allocated under
// reduce_scatter_stream), and the caching allocator reuses a freed block only on the stream that
// allocated it: freed by zero_grad, those blocks stay reserved for the next step's gradients, out
// of the activations' reach. So M_reserved rests on the gradients as if kept (§11).
double backward_held(const StageMemory& st);
double step_allocated(const StageMemory& st);

// The allocated peak of a run's first iteration, for a measurement read after it: PyTorch's
// optimizers create their states at their first step (torch/optim/adam.py `_init_group`:
// `state["exp_avg"] = torch.zeros_like(p)` on an empty state; Apex's and Transformer Engine's
// FusedAdam the same), so the first backward runs without them and the first step adds them.
double first_iteration_allocated(const StageMemory& st);

}  // namespace meshfit
