// The routed experts' grouped GEMMs at few tokens per expert (issue 20; search-and-time.md §7.3):
// each kernel takes the roofline's max of compute time and the time to read its experts' weights
// and its rows from HBM, against bytes counted by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/layer_time.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Qwen3-30B-A3B (h 2048, 128 experts of f_e 768, top-8, SwiGLU) with EP 16 on 16 H100s: 8 local
// experts per device. A micro-batch of one 128-token sequence routes 1,024 rows to each device.
test::Case qwen3(std::int64_t seq) {
  auto c = make_case("qwen3-30b-a3b", 16, seq, 16, "dp=16,ep=16,zero=1,mbs=1,recompute=none");
  c.run.options.moe_imbalance = 1.0;
  c.run.profile.elementwise = false;  // the layer's HBM time is then the experts' alone
  c.run.profile.moe_routing = MoeRouting::none;
  return c;
}

}  // namespace

TEST_CASE("a routed-expert GEMM reads its local experts' weights and its rows") {
  const auto c = qwen3(128);
  // Up: weights 8 · 2048 · 1536 · 2 = 50,331,648; rows 1,024 · (2048 + 1536) · 2 = 7,340,032.
  CHECK_BYTES(expert_gemm_bytes(c.model, c.run, c.strategy, true, 1.0), 57'671'680.0);
  // Down: weights 8 · 768 · 2048 · 2 = 25,165,824; rows 1,024 · (768 + 2048) · 2 = 5,767,168.
  CHECK_BYTES(expert_gemm_bytes(c.model, c.run, c.strategy, false, 1.0), 30'932'992.0);
  // FP8 linears read one-byte weights.
  auto fp8 = c;
  fp8.run.options.fp8_linears = true;
  CHECK_BYTES(expert_gemm_bytes(fp8.model, fp8.run, fp8.strategy, true, 1.0), 25'165'824.0 + 7'340'032.0);
}

TEST_CASE("few tokens per expert: the grouped GEMMs wait on HBM; many: on the tensor cores") {
  const auto few = qwen3(128);
  const Device& d = few.cluster.device;
  const double bw = d.eta_hbm * d.hbm_bandwidth;
  const double eta = kernel_scales(few.run, d, few.strategy).linear;
  const LayerTime moe = layer_time(few.model, few.run, d, few.strategy, FfnKind::moe);
  // Without the floor the layer's forward would be the sum of its kernels' compute times; the
  // two expert kernels (F = 2·128·8·2048·1536 and 2·128·8·768·2048 FLOPs) are memory-bound here.
  const LayerFlops f = layer_flops(few.model, FfnKind::moe, 128, 128, 1, 1.0);
  double compute = 0, expert_compute = 0;
  int routed = 0;
  for (std::size_t i = 0; i < f.count; ++i) {
    const bool core = f.ops[i].role == OpRole::core;
    const double t = kernel_time(d, core ? kernel_scales(few.run, d, few.strategy).core : eta, f.ops[i].flops);
    compute += t;
    if (f.ops[i].role == OpRole::ffn_proj) {
      expert_compute += t;
      ++routed;
    }
  }
  REQUIRE(routed == 2);
  const double memory = (57'671'680.0 + 30'932'992.0) / bw;
  REQUIRE(memory > expert_compute);
  CHECK(moe.forward == doctest::Approx(compute - expert_compute + memory).epsilon(1e-12));
  // At 32,768 rows per local expert the same kernels are compute-bound: no floor.
  const auto many = qwen3(4096 * 8);
  const LayerTime big = layer_time(many.model, many.run, d, many.strategy, FfnKind::moe);
  const LayerFlops g = layer_flops(many.model, FfnKind::moe, 4096.0 * 8, 4096.0 * 8, 1, 1.0);
  double all = 0;
  for (std::size_t i = 0; i < g.count; ++i) {
    const bool core = g.ops[i].role == OpRole::core;
    all += kernel_time(d, core ? kernel_scales(many.run, d, many.strategy).core : eta, g.ops[i].flops);
  }
  CHECK(big.forward == doctest::Approx(all).epsilon(1e-12));
}
