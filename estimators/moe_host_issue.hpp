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
// Transformer Engine's GroupedLinear issues one cuBLASLt GEMM per local expert, and under FP8 one
// quantisation per expert and operand, from a loop in its C++ extension (common/gemm/
// cublaslt_gemm.cu, nvte_multi_tensor_gemm; pytorch/csrc/extensions/cast.cpp,
// multi_tensor_quantize_impl): those launches are counted apart (`*_per_expert`), as the host
// issues them at another rate than the Python-level ops around them. So are the plain tensor ops
// Megatron-Core repeats per local expert in a Python loop of its own (`*_expert_loop`: the expert
// biases' _apply_bias, its autograd nodes and the bias parameters' gradient hooks), each one
// dispatcher call and launch with no module around it.
struct MoeLayerLaunches {
  double forward_experts = 0;             // after the forward's sync: the routed experts' section, Python-level
  double forward_experts_per_expert = 0;  // ... its per-expert launches from GroupedLinear's loop
  double forward_expert_loop = 0;         // ... and from Megatron-Core's own loop over the experts
  double forward_rest = 0;                // the rest of the layer's forward (attention, norms, router, dispatch)
  double backward = 0;                    // the whole backward, which has no sync, Python-level
  double backward_per_expert = 0;         // ... its per-expert launches from GroupedLinear's loop
  double backward_expert_loop = 0;        // ... and from Megatron-Core's loop
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

// Host seconds per launch: τ for a Python-level launch, τ_e for one of GroupedLinear's C++ loop,
// τ_o for a plain tensor op of Megatron-Core's per-expert loop (FrameworkProfile).
struct HostIssueRates {
  double launch = 0, expert_launch = 0, op_launch = 0;
};

// The GPU idle time the host's issue adds to the layer. A kernel starts no earlier than its
// issue, so a stretch of issued kernels finishes no earlier than their issue time plus the GPU
// time of what follows them. After the forward's sync the queue is empty: with
// I_e = n_e·τ + n_e'·τ_e + n_e''·τ_o the expert section's issue, the layer's forward takes
// max(G_f, I_e + G_f − G_ahead − G_e, I_e + n_r·τ), and its backward, which the host issues ahead
// of the GPU, max(G_b, n_b·τ + n_b'·τ_e + n_b''·τ_o).
HostExposure host_issue_exposure(const MoeLayerLaunches& n, const HostIssueRates& rates, const MoeLayerGpu& g);

// Whether a run's MoE layers sync the host in their forward: dropless routing without a static
// token budget (RunOptions::ep_token_budget), with or without EP. Without EP the all-to-all
// dispatcher still reads the tokens per local expert on the host, for the grouped GEMMs' splits
// (token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess: cuda_sync_point "before_finish").
bool moe_dispatch_syncs_host(const RunOptions& o);

}  // namespace meshfit
