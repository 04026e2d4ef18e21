// The host issue time an MoE layer's forward sync exposes (estimators/moe_host_issue.hpp): launch
// counts from Transformer Engine's GroupedLinear and the one measured kernel count, and the
// exposure's two bounds, each by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/moe_host_issue.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("an MoE layer's launches: per local expert from GroupedLinear, the rest from the Nsight count") {
  // The rest: 463,348 kernels / (48 layers × 64 micro-batches) = 150.829427 per layer and
  // micro-batch, less the profiled run's bf16 experts at E = 8 (forward 2·8 + 2 = 18, backward
  // 4·8 + 2 = 34): 98.829427, a third of it forward (32.943142), two thirds backward (65.886285).
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");  // 128/16 = 8 local
  MoeLayerLaunches n = moe_layer_launches(c.model, c.run, c.strategy);
  CHECK(n.forward_experts == 18);
  CHECK(n.forward_rest == doctest::Approx(32.943142).epsilon(1e-7));
  CHECK(n.backward == doctest::Approx(34 + 65.886285).epsilon(1e-7));
  // FP8 at EP 8 (16 local experts): forward 4·16 + 6 = 70, backward 6·16 + 10 = 106.
  auto f = make_case("qwen3-30b-a3b", 8, 4096, 512, "dp=8,ep=8,zero=1,mbs=4");
  f.run.options.fp8_linears = true;
  n = moe_layer_launches(f.model, f.run, f.strategy);
  CHECK(n.forward_experts == 70);
  CHECK(n.backward == doctest::Approx(106 + 65.886285).epsilon(1e-7));
}

TEST_CASE("the host's issue is exposed after the sync, or where the whole layer issues slower than it runs") {
  const MoeLayerLaunches n{70, 30, 170};
  // τ 40 µs. Expert section: 70 · 40 µs = 2.8 ms against 0.2 ms queued ahead + 0.6 ms of GEMMs:
  // 2.0 ms. Whole forward: 100 · 40 µs = 4.0 ms against 3 ms: 1.0 ms. The larger, 2.0 ms.
  // Backward: 170 · 40 µs = 6.8 ms against 6 ms: 0.8 ms.
  HostExposure e = host_issue_exposure(n, 40e-6, MoeLayerGpu{0.2e-3, 0.6e-3, 3e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(2.0e-3).epsilon(1e-9));
  CHECK(e.backward == doctest::Approx(0.8e-3).epsilon(1e-9));
  // A long dispatch queued ahead hides the expert section; the whole forward's issue still shows
  // when the GPU's forward is short: 4.0 − 3.5 = 0.5 ms.
  e = host_issue_exposure(n, 40e-6, MoeLayerGpu{2.5e-3, 0.6e-3, 3.5e-3, 6e-3});
  CHECK(e.forward == doctest::Approx(0.5e-3).epsilon(1e-9));
  // A GPU slower than the host everywhere: nothing.
  e = host_issue_exposure(n, 40e-6, MoeLayerGpu{2.5e-3, 1e-3, 5e-3, 8e-3});
  CHECK(e.forward == 0);
  CHECK(e.backward == 0);
}

TEST_CASE("only a dropless dispatch without a token budget, under EP, syncs the host") {
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  RunOptions o = c.run.options;
  CHECK(moe_dispatch_syncs_host(o, c.strategy));
  o.ep_token_budget = true;
  CHECK_FALSE(moe_dispatch_syncs_host(o, c.strategy));
  o.ep_token_budget = false;
  o.moe_mode = MoeMode::capacity;
  CHECK_FALSE(moe_dispatch_syncs_host(o, c.strategy));
  auto no_ep = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=1,zero=1,mbs=1");
  CHECK_FALSE(moe_dispatch_syncs_host(no_ep.run.options, no_ep.strategy));
}

TEST_CASE("the Megatron profile's launch time gives the profiled run its measured idle") {
  // The Nsight comparison that counted the kernels also measured the GPU idle: 24.7138 s step less
  // 22.821 s GPU-active = 1.893 s over 48 MoE layers × 64 micro-batches = 0.616 ms per layer and
  // micro-batch (Qwen3-30B-A3B, 16 H100, EP 16, HybridEP, no EP overlap, bf16, one sequence of
  // 4096). The profile's τ was fitted so the model gives that; this holds it there within 5 %.
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  const LayerTime with = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  c.run.profile.host_launch_time = 0;
  const LayerTime without = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(with.ep - without.ep == doctest::Approx(0.616e-3).epsilon(0.05).scale(0));
}
