// The host issue time an MoE layer's forward sync exposes (estimators/moe_host_issue.hpp): launch
// counts per module (Megatron-Core, Transformer Engine's GroupedLinear), the exposure's two bounds,
// and the launch time against the one measured idle, each by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/moe_host_issue.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("an MoE layer's launches: per local expert from GroupedLinear, per module from Megatron-Core") {
  // Qwen3-30B-A3B at EP 16 (8 local experts), bf16, TP 1, the all-to-all dispatcher, eager, the
  // router unfused (Megatron's defaults). Forward: GQA attention 9 + q/k norm 4 + pre-MLP norm 1
  // + router 27 + dispatcher 19 + residual forks 1 = 61; experts 2·8 + 2 = 18, of which the 2·8
  // GEMMs per expert. Backward: 14 + 6 + 3 + 18 + 7 + 2 = 50, experts 4·8 + 2 = 34 (4·8 per expert).
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  MoeLayerLaunches n = moe_layer_launches(c.model, c.run, c.strategy);
  CHECK(n.forward_experts == 2);
  CHECK(n.forward_experts_per_expert == 16);
  CHECK(n.forward_rest == 61);
  CHECK(n.backward == 50 + 2);
  CHECK(n.backward_per_expert == 32);
  // The profiled run: HybridEP (10 / 7), its router and preprocessing one CUDA graph (1 / 1):
  // forward 9 + 4 + 1 + 1 + 10 + 1 = 26, backward 14 + 6 + 3 + 1 + 7 + 2 = 33.
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  c.run.options.cuda_graph_moe_router = true;
  n = moe_layer_launches(c.model, c.run, c.strategy);
  CHECK(n.forward_rest == 26);
  CHECK(n.backward == 33 + 2);
  // The attention graphed too: 1 / 1 for the attention and its q/k norm: 1 + 1 + 1 + 10 + 1 = 14.
  c.run.options.cuda_graph_attn = true;
  CHECK(moe_layer_launches(c.model, c.run, c.strategy).forward_rest == 14);
  // FP8 at EP 8 (16 local experts): forward 4·16 + 6 = 70 (a GEMM and a quantisation per expert
  // and linear: 64), backward 6·16 + 10 = 106 (96 per expert); a fused router (9 / 13) in place of
  // the unfused one: forward 61 − 27 + 9 = 43, backward 50 − 18 + 13 = 45.
  auto f = make_case("qwen3-30b-a3b", 8, 4096, 512, "dp=8,ep=8,zero=1,mbs=4");
  f.run.options.fp8_linears = true;
  f.run.options.moe_router_fusion = true;
  n = moe_layer_launches(f.model, f.run, f.strategy);
  CHECK(n.forward_experts == 6);
  CHECK(n.forward_experts_per_expert == 64);
  CHECK(n.forward_rest == 43);
  CHECK(n.backward == 10 + 45);
  CHECK(n.backward_per_expert == 96);
  // MLA with shared experts under TP 2 + SP (DeepSeek-V2-Lite, 64 experts at EP 8): attention
  // 39 + its SP collectives 5, pre-MLP norm 1, router 27, dispatcher 19, shared expert 4 + its SP
  // collectives 2, forks 1 = 98 forward; 47 + 6 + 3 + 18 + 7 + 5 + 3 + 2 = 91 backward, and the
  // experts 4·8 + 2 = 34 (4·8 per expert).
  auto mla = make_case(test::data_path("models/deepseek-v2-lite.json"), 8, 4096, 32, "dp=4,tp=2,sp=true,ep=8");
  n = moe_layer_launches(mla.model, mla.run, mla.strategy);
  CHECK(n.forward_rest == 98);
  CHECK(n.backward == 91 + 2);
  CHECK(n.backward_per_expert == 32);
  // With the fused rotary the attention is 12 / 23 in place of 39 / 47: 98 − 39 + 12 = 71
  // forward, 93 − 47 + 23 = 69 backward.
  mla.run.options.rope_fusion = true;
  n = moe_layer_launches(mla.model, mla.run, mla.strategy);
  CHECK(n.forward_rest == 71);
  CHECK(n.backward == 69);
  // A query latent (DeepSeek-V3, q_lora_rank 1536) adds 2 / 4 to the attention. At TP 1 and EP 8
  // with the all-to-all dispatcher: attention 39 + 2, pre-MLP norm 1, router 27, dispatcher 19,
  // shared expert 4, forks 1 = 93 forward; 47 + 4 + 3 + 18 + 7 + 5 + 2 = 86 backward, and the
  // experts' 2 Python-level; fused rotary: 93 − 39 + 12 = 66, 88 − 47 + 23 = 64.
  auto v3 = make_case("deepseek-v3", 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  n = moe_layer_launches(v3.model, v3.run, v3.strategy);
  CHECK(n.forward_rest == 93);
  CHECK(n.backward == 86 + 2);
  v3.run.options.rope_fusion = true;
  n = moe_layer_launches(v3.model, v3.run, v3.strategy);
  CHECK(n.forward_rest == 66);
  CHECK(n.backward == 64);
}

TEST_CASE("the host's issue is exposed after the sync, or where the whole layer issues slower than it runs") {
  // 6 Python-level and 64 per-expert launches in the expert section, 30 in the rest of the
  // forward; backward 42 Python-level and 128 per-expert.
  MoeLayerLaunches n;
  n.forward_experts = 6;
  n.forward_experts_per_expert = 64;
  n.forward_rest = 30;
  n.backward = 42;
  n.backward_per_expert = 128;
  // Both at τ 40 µs. Expert section: 70 · 40 µs = 2.8 ms against 0.2 ms queued ahead + 0.6 ms of
  // GEMMs: 2.0 ms. Whole forward: 100 · 40 µs = 4.0 ms against 3 ms: 1.0 ms. The larger, 2.0 ms.
  // Backward: 170 · 40 µs = 6.8 ms against 6 ms: 0.8 ms.
  HostExposure e = host_issue_exposure(n, HostIssueRates{40e-6, 40e-6, 40e-6}, MoeLayerGpu{0.2e-3, 0.6e-3, 3e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(2.0e-3).epsilon(1e-9));
  CHECK(e.backward == doctest::Approx(0.8e-3).epsilon(1e-9));
  // A long dispatch queued ahead hides the expert section; the whole forward's issue still shows
  // when the GPU's forward is short: 4.0 − 3.5 = 0.5 ms.
  e = host_issue_exposure(n, HostIssueRates{40e-6, 40e-6, 40e-6}, MoeLayerGpu{2.5e-3, 0.6e-3, 3.5e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(0.5e-3).epsilon(1e-9));
  // A GPU slower than the host everywhere: nothing.
  e = host_issue_exposure(n, HostIssueRates{40e-6, 40e-6, 40e-6}, MoeLayerGpu{2.5e-3, 1e-3, 5e-3, 8e-3});
  CHECK(e.forward == 0);
  CHECK(e.backward == 0);
  // The per-expert launches at 20 µs: expert section 6 · 40 + 64 · 20 = 1.52 ms, less 0.8 ms:
  // 0.72 ms; whole forward 1.52 + 30 · 40 µs = 2.72 ms, under the GPU's 3 ms. Backward
  // 42 · 40 + 128 · 20 = 4.24 ms, under 6 ms: nothing.
  e = host_issue_exposure(n, HostIssueRates{40e-6, 20e-6, 40e-6}, MoeLayerGpu{0.2e-3, 0.6e-3, 3e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(0.72e-3).epsilon(1e-9));
  CHECK(e.backward == 0);
  // Megatron's own per-expert loop at τ_o 10 µs: 32 launches in the expert section, 128 in the
  // backward. Expert section 1.52 + 32 · 10 µs = 1.84 ms, less 0.8: 1.04 ms (the whole forward,
  // 1.84 + 1.2 = 3.04 ms, is 0.04 ms over 3 ms). Backward 4.24 + 1.28 = 5.52 ms, under 6 ms.
  n.forward_expert_loop = 32;
  n.backward_expert_loop = 128;
  e = host_issue_exposure(n, HostIssueRates{40e-6, 20e-6, 10e-6}, MoeLayerGpu{0.2e-3, 0.6e-3, 3e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(1.04e-3).epsilon(1e-9));
  CHECK(e.backward == 0);
}

TEST_CASE("gpt-oss under Megatron: the expert biases' per-expert loop and the unfused YaRN rotary") {
  // gpt-oss-120B at EP 8 (16 local experts), bf16, TP 1, the all-to-all dispatcher, router
  // unfused. Forward: GQA attention 9 + the unfused rotary's 22 more (its YaRN factor, 1.35, has
  // no fused kernel) + pre-MLP norm 1 + router 27 + dispatcher 19 + forks 1 = 79; the experts'
  // section: GroupedLinear 2·16 per expert, Python-level 2 + _apply_bias's cat and cast 2 = 4,
  // and _apply_bias's loop 2·16 = 32. Backward: 14 + 16 + 3 + 18 + 7 + 2 = 60, Python-level
  // experts 2 + bias 3 = 5; GroupedLinear 4·16 = 64; the loop 8·16 = 128 (per expert the add's
  // and the product's gradients, 6, and the FC1 and FC2 bias parameters' main_grad adds, 2).
  auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  const MoeLayerLaunches n = moe_layer_launches(c.model, c.run, c.strategy);
  CHECK(n.forward_rest == 79);
  CHECK(n.forward_experts == 4);
  CHECK(n.forward_experts_per_expert == 32);
  CHECK(n.forward_expert_loop == 32);
  CHECK(n.backward == 65);
  CHECK(n.backward_per_expert == 64);
  CHECK(n.backward_expert_loop == 128);
  // The profile prices the loop at 8 µs a launch (data/frameworks/megatron.yaml).
  CHECK(c.run.profile.host_op_launch_time == doctest::Approx(8e-6));
}

TEST_CASE("Transformer Engine's fused grouped MLP: one launch per grouped kernel, no per-expert loops") {
  // gpt-oss-120B at EP 8 as above, with the fused grouped MLP: the experts' forward 3 (FC1's input
  // quantised, FC1 with the GLU epilogue, FC2 with its bias), backward 6 (the output gradient
  // quantised, FC2's dgrad with the dGLU epilogue, two weight gradients, FC1's dgrad, the grouped
  // bias gradient); the rest of the layer as before, 79 / 60.
  auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  c.run.options.te_fused_grouped_mlp = true;
  const MoeLayerLaunches n = moe_layer_launches(c.model, c.run, c.strategy);
  CHECK(n.forward_rest == 79);
  CHECK(n.forward_experts == 3);
  CHECK(n.forward_experts_per_expert == 0);
  CHECK(n.forward_expert_loop == 0);
  CHECK(n.backward == 60 + 6);
  CHECK(n.backward_per_expert == 0);
  CHECK(n.backward_expert_loop == 0);
}

TEST_CASE("a dropless dispatch without a token budget syncs the host, with or without EP") {
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  RunOptions o = c.run.options;
  CHECK(moe_dispatch_syncs_host(o));
  o.ep_token_budget = true;
  CHECK_FALSE(moe_dispatch_syncs_host(o));
  o.ep_token_budget = false;
  o.moe_mode = MoeMode::capacity;
  CHECK_FALSE(moe_dispatch_syncs_host(o));
  // Without EP the dispatcher still reads the tokens per expert on the host ("before_finish"),
  // with no all-to-alls (3 / 3) nor sorts (4 / 2): forward 61 − 7 = 54, backward 50 − 5 = 45, and
  // all 128 experts local: 2·128 + 2 = 258 forward, 4·128 + 2 = 514 backward (2·128 and 4·128
  // of them per expert).
  auto no_ep = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=1,zero=1,mbs=1");
  CHECK(moe_dispatch_syncs_host(no_ep.run.options));
  const MoeLayerLaunches n = moe_layer_launches(no_ep.model, no_ep.run, no_ep.strategy);
  CHECK(n.forward_rest == 54);
  CHECK(n.forward_experts == 2);
  CHECK(n.forward_experts_per_expert == 256);
  CHECK(n.backward == 45 + 2);
  CHECK(n.backward_per_expert == 512);
  // ... and the layer's EP time is that exposure alone.
  const LayerTime t = layer_time(no_ep.model, no_ep.run, no_ep.cluster.device, no_ep.strategy, FfnKind::moe);
  CHECK(t.ep > 0);
  no_ep.run.profile.host_launch_time = 0;
  CHECK(layer_time(no_ep.model, no_ep.run, no_ep.cluster.device, no_ep.strategy, FfnKind::moe).ep == 0);
}

TEST_CASE("the Megatron profile's launch time gives the profiled run its measured idle") {
  // The Nsight comparison that counted the kernels also measured the GPU idle: 24.7138 s step less
  // 22.821 s GPU-active = 1.893 s over 48 MoE layers × 64 micro-batches = 0.616 ms per layer and
  // micro-batch (Qwen3-30B-A3B, 16 H100, EP 16, HybridEP, no EP overlap, bf16, one sequence of
  // 4096). With the per-expert launches at the profile's 33.4 µs (Transformer Engine's own
  // benchmark, data/frameworks/megatron.yaml), the other launches' τ was fitted so the model gives
  // that; this holds it there within 5 %.
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  c.run.options.cuda_graph_moe_router = true;  // its router and preprocessing ran as CUDA graphs
  const LayerTime with = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  c.run.profile.host_launch_time = 0;
  const LayerTime without = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(with.ep - without.ep == doctest::Approx(0.616e-3).epsilon(0.05).scale(0));
}
