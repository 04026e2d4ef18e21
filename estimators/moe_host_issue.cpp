#include "estimators/moe_host_issue.hpp"

#include <algorithm>

#include "estimators/rotary_kernels.hpp"

namespace meshfit {

namespace {

// Kernel launches (NCCL collectives included) of one module, forward and backward, per layer and
// micro-batch, bf16, eager: counted from Megatron-Core (megatron/core/transformer/attention.py,
// multi_latent_attention.py, moe/router.py, moe/token_dispatcher.py, moe/shared_experts.py;
// NVIDIA/Megatron-LM @d98e8a6) and Transformer Engine (pytorch/module/linear.py,
// layernorm_linear.py, attention/dot_product_attention, fused RoPE; NVIDIA/TransformerEngine
// @d0067d0), one per torch elementwise op, GEMM, extension call, copy of a non-contiguous input
// and collective. The cuDNN attention's own count is an estimate (its code is closed), ±1.
struct Launches {
  double forward = 0, backward = 0;
};
// Attention with GQA: the input norm fused into the QKV projection (2 / 4 + the main_grad add),
// fused RoPE on q and k (2 / 2), the strided V made contiguous (1 / 0), cuDNN attention (2 / 3),
// the QKV split's concatenation in the backward (0 / 1), the output projection (1 / 2), the
// residual add (1 / 1 at its fork).
constexpr Launches kGqaAttention{9, 14};
// The unfused rotary in place of the fused one on q and k (rotary_kernels.hpp): per tensor, the
// cos and sin of the frequencies each scaled and cast (6), t·cos, the rotated half's negation
// and concatenation, its product with sin, the sum, and the concatenation with the empty
// unrotated rest (6): 12 forward; backward the two products' gradients, the negation's, the
// halves' concatenation, the two branches' sum, the rotated slice's zero-filled gradient and copy,
// the empty rest's zero fill and their sum: 9. For q and k, 24 / 18 less the fused 2 / 2.
constexpr Launches kGqaUnfusedRotary{22, 16};
constexpr Launches kQkNorm{4, 6};  // the q and k heads copied and normed (Qwen3's qk_layernorm)
// MLA without a query latent, with Megatron-Core's unfused rotary on the rope parts of q and k
// (13 / 12 each; Megatron-Bridge's DeepSeek recipes keep apply_rope_fusion off): the input norm,
// the q, kv-down and (norm-fused) kv-up projections, the nope/rope concatenations, cuDNN
// attention, the output projection and the residual add.
constexpr Launches kMlaAttention{39, 47};
// The same with the fused rotary (RunOptions::rope_fusion; multi_latent_attention.py,
// qkv_up_proj_and_rope_apply): fused_apply_mla_rope_for_q and fused_apply_mla_rope_for_kv (1 / 1
// each) take the place of the two rotaries (2 × 13 / 2 × 12), the query's and the key's
// concatenations and the value's contiguous copy (3 / 0), and the concatenations of the q and kv
// splits' gradients (0 / 2): 39 − 29 + 2 = 12, 47 − 26 + 2 = 23.
constexpr Launches kMlaAttentionFusedRope{12, 23};
// A query latent (DeepSeek-V3's q_lora_rank) adds the q down-projection (1 / 2) and makes the q
// up-projection norm-fused (2 / 4 in place of 1 / 2).
constexpr Launches kMlaQueryLatent{2, 4};
constexpr Launches kPreMlpNorm{1, 3};
// The router: gating GEMM, top-k, scores, counts and the auxiliary loss. Fused
// (--moe-router-fusion): 9 / 13; unfused (softmax, aux_loss): 27 / 18.
constexpr Launches kRouterFused{9, 13};
constexpr Launches kRouterUnfused{27, 18};
// The dropless all-to-all dispatcher with permute fusion, expert-TP 1: the count all-gather and
// its preprocessing (6 kernels + 1 collective, which moe_preprocess graphs), permute, the token
// and probability all-to-alls, the sort of chunks by local expert and back, the combine
// all-to-all and unpermute: 15 kernels + 4 collectives / 4 + 3.
constexpr Launches kAllToAllDispatch{19, 7};
constexpr double kAllToAllPreprocess = 7;
// The same without EP (ep·etp = 1): no all-to-alls (3 / 3) nor sorts by local expert (4 / 2).
constexpr Launches kLocalDispatch{12, 2};
// HybridEP and DeepEP: their own kernels and copies, 8-12 / 6-8; the middle.
constexpr Launches kFusedDispatch{10, 7};
constexpr Launches kSharedExpert{4, 5};   // two GEMMs and SwiGLU, and the add into the output
constexpr Launches kResidualForks{1, 2};  // the MLP's residual add and the autograd adds at forks
// Under TP: sequence parallelism's all-gather and reduce-scatter around each block (forward 2;
// backward the input re-gathered, the data gradient reduce-scattered and the output gradient
// gathered, 3), MLA's two more for its latent and rotary key; plain TP's all-reduces (1 / 1).
constexpr Launches kSpCollectives{2, 3};
constexpr Launches kMlaSpCollectives{5, 6};
constexpr Launches kTpAllReduces{1, 1};
// A module a CUDA graph captures is one launch each way.
constexpr Launches kGraph{1, 1};

// The routed experts' kernels, from Transformer Engine's GroupedLinear up to 2.14
// (transformer_engine/pytorch/module/grouped_linear.py, _GroupedLinear: general_grouped_gemm
// launches one cuBLASLt GEMM per expert, and under FP8 _split_quantize one quantisation per expert
// and operand), for the two grouped linears and the activation between them, with E local experts:
//   bf16: forward 2E + 2 (two GEMMs per expert), backward 4E + 2 (data and weight gradients);
//   FP8 and MXFP8: forward 4E + 6, backward 6E + 10 (each GEMM's operands quantised first).
// The E-terms are the per-expert launches of TE's C++ loop; the constants (the activation, the
// splits, the quantisers' set-up) are Python-level.
struct ExpertLaunches {
  double per_expert = 0, python = 0;
};
ExpertLaunches expert_launches_forward(double E, bool fp8) {
  return fp8 ? ExpertLaunches{4 * E, 6} : ExpertLaunches{2 * E, 2};
}
ExpertLaunches expert_launches_backward(double E, bool fp8) {
  return fp8 ? ExpertLaunches{6 * E, 10} : ExpertLaunches{4 * E, 2};
}

// Transformer Engine's fused grouped MLP (RunOptions::te_fused_grouped_mlp; ops/fused/grouped_mlp.py):
// one launch per grouped kernel, none per expert. Forward: FC1's input quantised, FC1 with the GLU
// epilogue, FC2 with its bias (3); backward: the output gradient quantised, FC2's dgrad with the
// dGLU epilogue, the two weight gradients, FC1's dgrad and the grouped bias gradient (6).
constexpr ExpertLaunches kFusedGroupedMlpForward{0, 3};
constexpr ExpertLaunches kFusedGroupedMlpBackward{0, 6};

// Expert biases (gpt-oss) under Megatron-Core's TEGroupedMLP (megatron/core/transformer/moe/
// experts.py @23265d2, the Megatron-LM of Megatron-Bridge 26.04): FC1's bias rides in its GEMMs'
// epilogue, but FC2's is added after them by _apply_bias, a Python loop over the local experts:
// `t + b * p` per expert (2 plain ops each), then a concatenation and a cast back to bf16
// (Python-level, 2). Its backward: the cast (1); per expert the bf16 cast of t's gradient (the
// sum was fp32), the product's two gradients, each a multiply and a broadcast reduction, and b's
// back to bf16 (1 + 5); the two splits' concatenations (2); and every expert's FC1 and FC2 bias
// parameters get their gradient added into main_grad by Megatron's DDP hook (distributed/
// distributed_data_parallel.py, _make_backward_post_hook: main_grad.add_, 2 per expert; the
// weights' gradients are accumulated inside their GEMMs). Loop: 2E forward, 8E backward;
// Python-level: 2 and 3.
struct BiasLaunches {
  double loop = 0, python = 0;
};
BiasLaunches expert_bias_launches_forward(double E) { return BiasLaunches{2 * E, 2}; }
BiasLaunches expert_bias_launches_backward(double E) { return BiasLaunches{8 * E, 3}; }

}  // namespace

MoeLayerLaunches moe_layer_launches(const Model& m, const Run& run, const Strategy& s) {
  const RunOptions& o = run.options;
  const double E = static_cast<double>(m.experts) / static_cast<double>(s.ep * s.etp);
  const bool mla = m.attention == AttentionKind::mla;
  Launches rest;
  const auto add = [&](Launches l) {
    rest.forward += l.forward;
    rest.backward += l.backward;
  };
  // A block's TP collectives: SP's gathers and scatters, or plain TP's all-reduces.
  const auto tp_collectives = [&](Launches sp) {
    if (s.tp > 1) add(s.sp ? sp : kTpAllReduces);
  };
  if (o.cuda_graph_attn) {
    add(kGraph);
  } else {
    add(!mla ? kGqaAttention : o.rope_fusion ? kMlaAttentionFusedRope : kMlaAttention);
    if (mla && m.q_lora_rank > 0) add(kMlaQueryLatent);
    if (m.qk_norm && !mla) add(kQkNorm);
    if (!mla && megatron_rotary_unfused(m, o)) add(kGqaUnfusedRotary);
    tp_collectives(mla ? kMlaSpCollectives : kSpCollectives);
  }
  add(kPreMlpNorm);
  add(o.cuda_graph_moe_router ? kGraph : o.moe_router_fusion ? kRouterFused : kRouterUnfused);
  const bool local = s.ep * s.etp == 1, all_to_all = o.ep_dispatch == EpDispatch::all_to_all;
  add(local ? kLocalDispatch : all_to_all ? kAllToAllDispatch : kFusedDispatch);
  if (o.cuda_graph_moe_router && (local || all_to_all)) rest.forward -= kAllToAllPreprocess;
  if (m.shared_experts > 0) {
    add(kSharedExpert);
    tp_collectives(kSpCollectives);
  }
  add(kResidualForks);
  const bool fp8 = o.fp8_linears;
  const bool fused_mlp = o.te_fused_grouped_mlp;
  const ExpertLaunches forward = fused_mlp ? kFusedGroupedMlpForward : expert_launches_forward(E, fp8);
  const ExpertLaunches backward = fused_mlp ? kFusedGroupedMlpBackward : expert_launches_backward(E, fp8);
  MoeLayerLaunches n;
  n.forward_experts_per_expert = forward.per_expert;
  n.forward_experts = forward.python;
  n.forward_rest = rest.forward;
  n.backward_per_expert = backward.per_expert;
  n.backward = backward.python + rest.backward;
  if (m.mlp_bias && !fused_mlp) {
    const BiasLaunches bias_forward = expert_bias_launches_forward(E), bias_backward = expert_bias_launches_backward(E);
    n.forward_expert_loop = bias_forward.loop;
    n.forward_experts += bias_forward.python;
    n.backward_expert_loop = bias_backward.loop;
    n.backward += bias_backward.python;
  }
  return n;
}

HostExposure host_issue_exposure(const MoeLayerLaunches& n, const HostIssueRates& r, const MoeLayerGpu& g) {
  HostExposure e;
  // Forward: the queue is empty at the sync. The expert section's kernels cannot finish before
  // the host issues them, I_e = n_e·τ + n_e'·τ_e + n_e''·τ_o, nor before what is queued ahead of
  // them and their own GPU time; the rest of the layer then runs at the GPU's pace unless the
  // whole forward's issue, I_e + n_r·τ, is longer.
  const double experts_issue = n.forward_experts * r.launch + n.forward_experts_per_expert * r.expert_launch +
                               n.forward_expert_loop * r.op_launch;
  const double expert_lag = experts_issue - (g.queued_ahead + g.experts_forward);
  const double forward_lag = experts_issue + n.forward_rest * r.launch - g.forward;
  e.forward = std::max({0.0, expert_lag, forward_lag});
  // Backward: no sync, so the host runs ahead and only a backward that issues slower than it runs
  // is host-bound.
  const double backward_issue =
      n.backward * r.launch + n.backward_per_expert * r.expert_launch + n.backward_expert_loop * r.op_launch;
  e.backward = std::max(0.0, backward_issue - g.backward);
  return e;
}

bool moe_dispatch_syncs_host(const RunOptions& o) { return o.moe_mode == MoeMode::dropless && !o.ep_token_budget; }

}  // namespace meshfit
