// What the memory model returns: every stage's terms (docs/spec/memory-model.md §13).
#pragma once

#include <cstdint>
#include <vector>

namespace meshfit {

struct StageMemory {
  std::int64_t stage = 0;
  // Layout.
  std::int64_t layers = 0;          // body layers held
  std::int64_t full_recompute = 0;  // of which fully recomputed
  bool embedding = false, head = false;
  std::int64_t mtp_depths = 0;
  // Static (§6).
  double weights = 0, grads = 0, optimizer = 0, gathered = 0, fp8_cache = 0;
  // Of `optimizer`, the states the optimizer creates at its first step (Adam's moments; the fp32
  // master copy exists from the start): absent through a run's first forward and backward.
  double optimizer_moments = 0;
  double deferred_grads = 0;    // unsharded gradients held through the backward passes (ruling 10)
  double pipeline_buffers = 0;  // PyTorch pipelining's receive buffers and kept outputs (§8.6)
  double host = 0;              // offloaded model states, in host memory per rank (§6.4)
  // Activations (§7, §8).
  std::vector<double> chunk_bytes;           // A(i,c)
  std::vector<std::int64_t> chunk_inflight;  // n(i,c) at the peak
  double activations = 0;                    // M_act
  // Transients (§9).
  double tr_layer = 0, tr_attn = 0, tr_logits = 0, tr_fsdp = 0, tr_bucket = 0, tr_cp = 0, tr_ep = 0;
  double tr_dpv = 0;              // DualPipeV overlap (replaces tr_layer)
  std::int64_t tr_layer_at = -1;  // the layer that sets tr_layer (body index; ≥ L for MTP)
  double transient = 0;           // Tr
  double step_transient = 0;      // Tr_step
  // No gradient at the backward's start (grads_built_in_backward, model_states.hpp): M_alloc's
  // backward is the larger of its two ends (overheads.hpp backward_phase).
  bool grads_built_in_backward = false;
  // --rules sapp-nd (§17.5.1): the per-layer communication buffers SAPP-ND holds as activations.
  double seed_comm = 0;
  bool step_phase_binds = false;  // M_alloc set by the optimizer step
  // Totals (§11).
  double allocated = 0, reserved = 0;
  std::int64_t communicators = 0;  // n_comm
  double cuda_context = 0, communicator_buffers = 0, workspaces = 0, ep_library = 0, fixed_margin = 0;
  double tp_overlap_buffers = 0;  // O_tpo (tp_overlap_buffers.hpp), set before stage_totals
  double device = 0;

  double static_total() const { return weights + grads + optimizer + gathered + fp8_cache; }
  // The model states allocated once and kept from step to step (not the gathered parameters, which
  // FSDP/ZeRO-3 gathers and frees every step): what the allocator's reserve does not grow on (§11).
  double persistent() const { return weights + grads + optimizer + fp8_cache; }
  double fragmentation() const { return reserved - allocated; }
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double peak = 0;              // M_peak = max_i M_device(i)
  std::int64_t peak_stage = 0;  // lowest index on ties
  double capacity = 0;
  double budget = 0;  // capacity − headroom
  bool fits = false;
  // max_i of the device total with the static total in place of M_alloc: a floor of the peak of
  // every strategy with the same model states and overheads (the search's ZeRO-setting bound).
  double static_floor = 0;
  // Host memory (§6.4), checked only when the strategy offloads: the largest stage's offloaded
  // states per rank, what a device's share of host memory leaves them, and whether they fit.
  // `fits` above holds both budgets.
  double host_peak = 0;
  double host_budget = 0;
  bool host_fits = true;
};

}  // namespace meshfit
