// The host's issue time of an MoE layer, and the GPU time it leaves exposed (search-and-time.md
// §7.5, issue 20). A dropless dispatcher must learn how many tokens each local expert receives
// before it can size the expert GEMMs, so once per MoE layer forward the host blocks on the GPU:
// Megatron-Core's all-to-all dispatcher waits on a device-to-host copy of the counts
// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher: cuda_sync_point,
// d2h_event.synchronize), DeepEP's dispatch busy-waits on the host for the received counts, and
// HybridEP without a static token budget reads tokens_per_expert.sum() after its dispatch
// (_HybridEPManager.dispatch). The GPU queue is then empty, and every kernel after the sync starts
// no earlier than the host issues it: with eager PyTorch and Transformer Engine issuing tens of
// small kernels per expert section, the host, not the GPU, sets the pace. Megatron-Core's MoE
// README names it ("CPU Overhead Bottleneck"); full-iteration CUDA graphs remove it, and need a
// static token budget, which needs no sync.
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Kernels the host issues for one MoE layer and one micro-batch.
struct MoeLayerLaunches {
  double forward_experts = 0;  // after the forward's sync: the routed experts' grouped GEMMs
  double forward_rest = 0;     // the rest of the layer's forward (attention, norms, router, dispatch)
  double backward = 0;         // the whole backward, which has no sync
};
MoeLayerLaunches moe_layer_launches(const Model& m, const Run& run, const Strategy& s);

// GPU time of the same layer and micro-batch, seconds: what is queued after the forward's sync
// ahead of the expert GEMMs (the dispatch all-to-all, where the sync precedes it), the expert
// GEMMs' forward, and the layer's whole forward and backward (compute and exposed communication).
struct MoeLayerGpu {
  double queued_ahead = 0, experts_forward = 0, forward = 0, backward = 0;
};

struct HostExposure {
  double forward = 0, backward = 0;
};

// The GPU idle time the host's issue adds to the layer, at `launch_time` seconds of host time per
// kernel. A kernel starts no earlier than its issue, so a stretch of j issued kernels finishes no
// earlier than j·τ plus the GPU time of what follows it. After the forward's sync the queue is
// empty: the layer's forward takes max(G_f, n_e·τ + G_f − G_ahead − G_e, (n_e + n_r)·τ), and its
// backward, which the host issues ahead of the GPU, max(G_b, n_b·τ).
HostExposure host_issue_exposure(const MoeLayerLaunches& n, double launch_time, const MoeLayerGpu& g);

// Whether a run's MoE layers sync the host in their forward: dropless routing without a static
// token budget (RunOptions::ep_token_budget), with or without EP. Without EP the all-to-all
// dispatcher still reads the tokens per local expert on the host, for the grouped GEMMs' splits
// (token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess: cuda_sync_point "before_finish").
bool moe_dispatch_syncs_host(const RunOptions& o);

}  // namespace meshfit
