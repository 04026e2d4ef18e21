#include "estimators/moe_host_issue.hpp"

#include <algorithm>

namespace meshfit {

namespace {

// Kernels per layer and micro-batch in the one measured count: Megatron-Bridge's Nsight comparison
// of Qwen3-30B-A3B on 16 H100s (bf16, EP 16 so 8 local experts, HybridEP, CUDA graphs on the router
// and its preprocessing; skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md) captured
// 463,348 rank-0 kernels in a step of 48 MoE layers × 64 micro-batches.
constexpr double kProfiledKernels = 463'348.0 / (48.0 * 64.0);
constexpr double kProfiledLocalExperts = 8;

// The routed experts' kernels, from Transformer Engine's GroupedLinear up to 2.12
// (transformer_engine/pytorch/module/grouped_linear.py, _GroupedLinear: general_grouped_gemm
// launches one cuBLASLt GEMM per expert, and under FP8 _split_quantize one quantisation per expert
// and operand), for the two grouped linears and the activation between them, with E local experts:
//   bf16: forward 2E + 2 (two GEMMs per expert), backward 4E + 2 (data and weight gradients);
//   FP8 and MXFP8: forward 4E + 6, backward 6E + 10 (each GEMM's operands quantised first).
double expert_launches_forward(double E, bool fp8) { return fp8 ? 4 * E + 6 : 2 * E + 2; }
double expert_launches_backward(double E, bool fp8) { return fp8 ? 6 * E + 10 : 4 * E + 2; }

// Everything else in the profiled count (attention, norms, router, dispatch and combine, and the
// step's own kernels spread over its layers), split as the GEMMs split: the backward runs two
// kernels (data and weight gradient) for each one of the forward.
constexpr double kRestLaunches = kProfiledKernels - (2 * kProfiledLocalExperts + 2) - (4 * kProfiledLocalExperts + 2);

}  // namespace

MoeLayerLaunches moe_layer_launches(const Model& m, const Run& run, const Strategy& s) {
  const double E = static_cast<double>(m.experts) / static_cast<double>(s.ep * s.etp);
  const bool fp8 = run.options.fp8_linears;
  MoeLayerLaunches n;
  n.forward_experts = expert_launches_forward(E, fp8);
  n.forward_rest = kRestLaunches / 3;
  n.backward = expert_launches_backward(E, fp8) + 2 * kRestLaunches / 3;
  return n;
}

HostExposure host_issue_exposure(const MoeLayerLaunches& n, double tau, const MoeLayerGpu& g) {
  HostExposure e;
  // Forward: the queue is empty at the sync. The expert section's n_e kernels cannot finish before
  // n_e·τ, nor before what is queued ahead of them and their own GPU time; the rest of the
  // layer then runs at the GPU's pace unless the whole forward's issue, (n_e + n_r)·τ, is longer.
  const double expert_lag = n.forward_experts * tau - (g.queued_ahead + g.experts_forward);
  const double forward_lag = (n.forward_experts + n.forward_rest) * tau - g.forward;
  e.forward = std::max({0.0, expert_lag, forward_lag});
  // Backward: no sync, so the host runs ahead and only a backward that issues slower than it runs
  // is host-bound.
  e.backward = std::max(0.0, n.backward * tau - g.backward);
  return e;
}

bool moe_dispatch_syncs_host(const RunOptions& o, const Strategy& s) {
  return (s.ep > 1 || s.etp > 1) && o.moe_mode == MoeMode::dropless && !o.ep_token_budget;
}

}  // namespace meshfit
