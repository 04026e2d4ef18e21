// Dynamic FP8 scaling's cast traffic (fp8_casts.hpp; search-and-time.md §7.3) against bytes counted
// by hand from torchao's roofline kernels, and float8 TP's all-gathers (§7.5).
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/collectives.hpp"
#include "estimators/fp8_casts.hpp"
#include "estimators/layer_time.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Llama-3.1-8B (h 4096, 32 heads, 8 KV heads of 128, f 14336) under torchtitan at TP 8 with SP,
// local batch 12 of 8192 tokens: M = 98,304 tokens per micro-batch, compiled, FP8 linears.
test::Case llama8b_fp8(Fp8Scaling scaling, const std::string& framework = "torchtitan") {
  auto c = make_case("llama-3.1-8b", 64, 8192, 96, "dp=8,tp=8,sp=true,zero=3,mbs=12", framework, "h100-96gb");
  c.run.options.torch_compile = true;
  c.run.options.fp8_linears = true;
  c.run.options.fp8_scaling = scaling;
  return c;
}

}  // namespace

TEST_CASE("tensorwise float8 under float8 TP: casts on the sequence shard, one per input") {
  const auto c = llama8b_fp8(Fp8Scaling::tensorwise);
  REQUIRE(c.run.profile.fp8_casts == Fp8Casts::torchao);
  const Fp8CastBytes b = fp8_cast_bytes(c.model, c.run, c.strategy, FfnKind::dense, 1.0);
  // Per token, elements cast: inputs wq/wk/wv 4096/8 (shared), wo 4096/8, w1/w3 4096/8 (shared),
  // w2 14336/8 = 3,328; output gradients q,k,v 6144/8, wo 4096/8 (shard), w1/w3 2·14336/8, w2
  // 4096/8 = 5,376. Weights: 4096·768 + 512·4096 + 4096·3584 + 1792·4096 = 27,262,976.
  // Forward: 98,304·3,328·6 + 27,262,976·5 = 2,099,249,152 bytes.
  // Backward: 98,304·5,376·6 + 27,262,976·3 = 3,252,682,752 bytes.
  CHECK_BYTES(b.forward, 2'099'249'152.0);
  CHECK_BYTES(b.backward, 3'252'682'752.0);
  CHECK(fp8_tp_all_gathers(c.run, c.strategy));
}

TEST_CASE("rowwise float8: bf16 TP, so every linear casts the gathered sequence itself") {
  const auto c = llama8b_fp8(Fp8Scaling::rowwise);
  const Fp8CastBytes b = fp8_cast_bytes(c.model, c.run, c.strategy, FfnKind::dense, 1.0);
  // Inputs: 3·4096 + 512 + 2·4096 + 1792 = 22,784; gradients 768 + 4096 + 3584 + 4096 = 12,544.
  // Forward: 98,304·22,784·5 + 27,262,976·3 = 11,280,580,608.
  // Backward: 98,304·22,784·3 + 98,304·12,544·8 + 27,262,976·7 = 16,775,118,848.
  CHECK_BYTES(b.forward, 11'280'580'608.0);
  CHECK_BYTES(b.backward, 16'775'118'848.0);
  CHECK_FALSE(fp8_tp_all_gathers(c.run, c.strategy));
}

TEST_CASE("MXFP8: each operand cast along both dimensions, with a scale byte per 32 elements") {
  const auto c = llama8b_fp8(Fp8Scaling::mxfp8);
  const Fp8CastBytes b = fp8_cast_bytes(c.model, c.run, c.strategy, FfnKind::dense, 1.0);
  // The rowwise element counts (bf16 TP), 3 + 1/32 bytes per element per cast:
  // forward 3.03125·(98,304·22,784 + 27,262,976) = 6,871,908,352;
  // backward 3.03125·(98,304·22,784 + 2·98,304·12,544 + 27,262,976) = 14,347,730,944.
  CHECK_BYTES(b.forward, 6'871'908'352.0);
  CHECK_BYTES(b.backward, 14'347'730'944.0);
  CHECK_FALSE(fp8_tp_all_gathers(c.run, c.strategy));
  // Its GEMMs at the profile's MXFP8 speedup: the tensorwise 1.6 times Transformer Engine's B300
  // GEMM benchmark, per-tensor FP8 6.812 ms over MXFP8 7.161 ms a layer: 1.522 (H100-96GB's fp8
  // matmul ratio is Hopper's, so no device scaling).
  CHECK(kernel_scales(c.run, c.cluster.device, c.strategy).linear ==
        doctest::Approx(1.6 * 6.812 / 7.161).epsilon(1e-4));
}

TEST_CASE("eager casts cost the profile's eager/compiled ratio; bf16 and Megatron price none") {
  auto eager = llama8b_fp8(Fp8Scaling::tensorwise);
  eager.run.options.torch_compile = false;
  const double ratio = eager.run.profile.eager_elementwise_passes / eager.run.profile.compiled_elementwise_passes;
  CHECK(fp8_cast_bytes(eager.model, eager.run, eager.strategy, FfnKind::dense, 1.0).forward ==
        doctest::Approx(2'099'249'152.0 * ratio).epsilon(1e-12));
  auto bf16 = llama8b_fp8(Fp8Scaling::tensorwise);
  bf16.run.options.fp8_linears = false;
  CHECK(fp8_cast_bytes(bf16.model, bf16.run, bf16.strategy, FfnKind::dense, 1.0).forward == 0);
  CHECK_FALSE(fp8_tp_all_gathers(bf16.run, bf16.strategy));
  // Transformer Engine fuses its casts into the norm and activation kernels: Megatron's FP8
  // GEMM speedup is net of them.
  const auto mg = llama8b_fp8(Fp8Scaling::tensorwise, "megatron");
  CHECK(fp8_cast_bytes(mg.model, mg.run, mg.strategy, FfnKind::dense, 1.0).backward == 0);
}

TEST_CASE("Transformer Engine gathers FP8 under every recipe; its reduce-scatters stay bf16") {
  // Llama-3.1-8B at tp 8 with SP, 98,304 tokens per micro-batch on an H100-96GB (NVLink 450 GB/s
  // at η_intra 0.70, α 2 µs): a bf16 all-gather or reduce-scatter of S = 98,304·4096·2 bytes
  // takes 7α + 7/8·S/(0.70·450e9); an FP8 all-gather half those bytes.
  const double S = 98304.0 * 4096 * 2, bw = 0.70 * 450e9;
  const double bf16 = 7 * 2e-6 + 7.0 / 8 * S / bw, fp8 = 7 * 2e-6 + 7.0 / 8 * S / 2 / bw;
  for (const Fp8Scaling scaling : {Fp8Scaling::tensorwise, Fp8Scaling::rowwise, Fp8Scaling::mxfp8}) {
    auto c = llama8b_fp8(scaling, "megatron");
    CHECK(fp8_tp_all_gathers(c.run, c.strategy));
    CHECK(layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense).tp_forward ==
          doctest::Approx(2 * fp8 + 2 * bf16));
    c.run.options.fp8_linears = false;
    CHECK(layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense).tp_forward ==
          doctest::Approx(4 * bf16));
  }
}

TEST_CASE("the casts add their HBM time to the layer; float8 TP halves the all-gathers' bytes") {
  const auto tw = llama8b_fp8(Fp8Scaling::tensorwise);
  auto net = tw;
  net.run.profile.fp8_casts = Fp8Casts::none;
  const Device& d = tw.cluster.device;
  const LayerTime with = layer_time(tw.model, tw.run, d, tw.strategy, FfnKind::dense);
  const LayerTime without = layer_time(net.model, net.run, d, net.strategy, FfnKind::dense);
  const double bw = d.eta_hbm * d.hbm_bandwidth;
  CHECK(with.forward - without.forward == doctest::Approx(2'099'249'152.0 / bw).epsilon(1e-9));
  CHECK(with.backward - without.backward == doctest::Approx(3'252'682'752.0 / bw).epsilon(1e-9));
  // Two SP pairs per dense layer; each all-gather carries M·h float8 bytes instead of bf16.
  auto bf16 = tw;
  bf16.run.options.fp8_linears = false;
  const LayerTime plain = layer_time(bf16.model, bf16.run, d, bf16.strategy, FfnKind::dense);
  const Group g = make_group(d, 1, 8);
  const double S = 98'304.0 * 4096.0;
  CHECK(with.tp_forward - plain.tp_forward ==
        doctest::Approx(2 * (all_gather(g, S) - all_gather(g, 2 * S))).epsilon(1e-9));
  CHECK(with.tp_forward < plain.tp_forward);
}
