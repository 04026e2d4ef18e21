// An MoE layer's routing traffic (moe_routing_bytes.hpp; search-and-time.md §7.3) against bytes
// counted by hand from Megatron-Core's and Transformer Engine's kernels.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/moe_routing_bytes.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Qwen3-30B-A3B (h 2048, 128 experts, top 8, expert width 768) on 16 H100s, ep 16, TP 1, 4,096
// tokens per micro-batch, under Megatron.
test::Case qwen3(const std::string& framework = "megatron") {
  return make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1", framework);
}

}  // namespace

TEST_CASE("Megatron's all-to-all dispatcher: router, permute, sort by local expert and back, unpermute") {
  const auto c = qwen3();
  REQUIRE(c.run.profile.moe_routing == MoeRouting::megatron);
  const MoeRoutingBytes b = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  // Per token (TP 1: every token is the rank's), 8 routed rows of h = 2048 bf16 elements:
  // forward 3·2048·2 (router input, permute input, unpermute output) + 52·8 + 47·128 (scores,
  // top-k, maps) + 8·6·2048·2 (rows written, sorted, unsorted, read) = 215,328 bytes;
  // backward 15·2048·2 + 48·8 + 25·128 + 8·6·2048·2 = 261,632 bytes.
  CHECK(b.forward == doctest::Approx(215'328.0));
  CHECK(b.backward == doctest::Approx(261'632.0));
  // The layer's memory-bound time grows by those bytes over its 4,096 tokens at η_hbm·B_hbm.
  auto off = c;
  off.run.profile.moe_routing = MoeRouting::none;
  const LayerTime with = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const LayerTime without = layer_time(off.model, off.run, off.cluster.device, off.strategy, FfnKind::moe);
  const double bw = 0.80 * 3350e9;
  CHECK(with.forward - without.forward == doctest::Approx(4096 * 215'328.0 / bw));
  CHECK(with.backward - without.backward == doctest::Approx(4096 * 261'632.0 / bw));
  // A dense layer routes nothing.
  CHECK(layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense).forward ==
        layer_time(off.model, off.run, off.cluster.device, off.strategy, FfnKind::dense).forward);
}

TEST_CASE("HybridEP permutes inside its dispatch; FP8 quantises each expert's operands") {
  auto c = qwen3();
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  const MoeRoutingBytes flex = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  // Rows written and read once (8·2·2048·2) and (2·16 + 5)·128 bytes of its metadata beside the
  // router's 30·128: forward 12,288 + 416 + 67·128 + 65,536 = 86,816; backward 61,440 + 384 +
  // 12·128 + 65,536 = 128,896.
  CHECK(flex.forward == doctest::Approx(86'816.0));
  CHECK(flex.backward == doctest::Approx(128'896.0));
  // FP8 current scaling with the all-to-all dispatcher: an amax pass and a cast with its transpose
  // (6 bytes per element) of FC1's input (2048) and FC2's (768) per row forward, of FC2's output
  // gradient (2048) and FC1's (2·768) backward, and the rows padded and unpadded (8·2048) each way:
  // 8·(6·2816 + 16,384) = 266,240 more forward, 8·(6·3584 + 16,384) = 303,104 backward.
  auto fp8 = qwen3();
  fp8.run.options.fp8_linears = true;
  const MoeRoutingBytes q = moe_routing_bytes(fp8.model, fp8.run, fp8.strategy, 1.0);
  CHECK(q.forward == doctest::Approx(215'328.0 + 266'240.0));
  CHECK(q.backward == doctest::Approx(261'632.0 + 303'104.0));
}

TEST_CASE("gpt-oss under Megatron: its experts' bias path and clamped activation move more") {
  // gpt-oss-120b (h 2880, 128 experts, top 4, width 2880; biased experts, swiglu_limit 7) at TP 1,
  // ep 8: 4 rows per token. The all-to-all dispatcher's 3·2880·2 + 52·4 + 47·128 + 4·6·2880·2 =
  // 161,744 bytes forward, plus FC2's per-expert fp32 bias path 4·28·2880 = 322,560 and the clamps
  // 4·16·2880 = 184,320: 668,624. Backward 15·2880·2 + 48·4 + 25·128 + 138,240 = 228,032, plus
  // 4·40·2880 = 460,800 and 4·18·2880 = 207,360: 896,192.
  const auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 64, 4096, 1280, "dp=64,ep=8,zero=1,mbs=1");
  REQUIRE(c.model.mlp_bias);
  REQUIRE(c.model.clamped_swiglu);
  const MoeRoutingBytes b = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  CHECK(b.forward == doctest::Approx(668'624.0));
  CHECK(b.backward == doctest::Approx(896'192.0));
}

TEST_CASE("Transformer Engine's fused grouped MLP keeps the bias, clamps and FC2's quantisation in its epilogues") {
  // gpt-oss-120b as above, MXFP8 (4.0625 B per quantised element, the all-to-all path's 8·2880
  // padding each way). Unfused: forward 668,624 + 4·(4.0625·(2880 + 2880) + 23,040) = 854,384;
  // backward 896,192 + 4·(4.0625·(2880 + 5760) + 23,040) = 1,128,752. Fused: no bias path, no
  // clamps, FC1's input alone quantised forward and FC2's output gradient alone backward:
  // 161,744 + 4·(11,700 + 23,040) = 300,704 and 228,032 + 138,960 = 366,992.
  auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 64, 4096, 1280, "dp=64,ep=8,zero=1,mbs=1");
  c.run.options.fp8_linears = true;
  c.run.options.fp8_scaling = Fp8Scaling::mxfp8;
  const MoeRoutingBytes unfused = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  CHECK(unfused.forward == doctest::Approx(854'384.0));
  CHECK(unfused.backward == doctest::Approx(1'128'752.0));
  auto fused_case = c;
  fused_case.run.options.te_fused_grouped_mlp = true;
  const MoeRoutingBytes fused = moe_routing_bytes(fused_case.model, fused_case.run, fused_case.strategy, 1.0);
  CHECK(fused.forward == doctest::Approx(300'704.0));
  CHECK(fused.backward == doctest::Approx(366'992.0));
  // The layer also drops the routed activation's elementwise pass, 4·3·2880·2 = 69,120 B per
  // token (twice in the backward): over 4,096 tokens at 0.80 · 3.35 TB/s, forward
  // (553,680 + 69,120)·4096 B = 9.518615e-4 s less, backward (761,760 + 138,240)·4096 B =
  // 1.375522e-3 s less.
  const LayerTime a = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const LayerTime f =
      layer_time(fused_case.model, fused_case.run, fused_case.cluster.device, fused_case.strategy, FfnKind::moe);
  CHECK(a.forward - f.forward == doctest::Approx(9.518615e-4).epsilon(1e-6));
  CHECK(a.backward - f.backward == doctest::Approx(1.375522e-3).epsilon(1e-6));
}

TEST_CASE("torchtitan's routing: its argsort, gathers, index_puts and fp32 weighting, eager or compiled") {
  // The same Qwen3-30B-A3B layout under torchtitan: 8 rows per token, h 2048, E 128.
  auto c = qwen3("torchtitan");
  REQUIRE(c.run.profile.moe_routing == MoeRouting::torchtitan);
  c.run.options.torch_compile = false;
  const MoeRoutingBytes eager = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  // Eager: 8·(34·2048 + 650) + 16·2048 + 22·128 = 597,840 forward; 8·(60·2048 + 550) + 18·2048 +
  // 16·128 = 1,026,352 backward; per-op SAC reruns the forward but its saved top-k (4·128).
  CHECK(eager.forward == doctest::Approx(597'840.0));
  CHECK(eager.backward == doctest::Approx(1'026'352.0));
  CHECK(eager.sac_recompute == doctest::Approx(597'840.0 - 512.0));
  c.run.options.torch_compile = true;
  const MoeRoutingBytes compiled = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  // Compiled: 8·(18·2048 + 500) + 16·2048 + 18·128 = 333,984; 8·(20·2048 + 100) + 12·2048 +
  // 16·128 = 355,104; SAC reruns the re-gather, the argsort and the router: 8·(4·2048 + 300) +
  // 6·2048 + 8·128 = 81,248.
  CHECK(compiled.forward == doctest::Approx(333'984.0));
  CHECK(compiled.backward == doctest::Approx(355'104.0));
  CHECK(compiled.sac_recompute == doctest::Approx(81'248.0));
}

TEST_CASE("gpt-oss under eager torchtitan: its biases repeated and added, its clamped SwiGLU as seven kernels") {
  // gpt-oss-20b (h 2880, 32 experts, top 4, width 2880) on 8 ranks, EP 1: 4 rows per token. Per
  // row beyond Qwen-style routing, bf16: the biases 2·(8·2880 + 4·2880) = 69,120 and the clamped
  // activation 2·13·2880 = 74,880 forward; backward 2·(2·2880 + 2880) = 17,280 and 2·34·2880 =
  // 195,840. The plain routing of the same layout: 4·(34·2880 + 650) + 16·2880 + 22·32 = 441,064
  // forward, 4·(60·2880 + 550) + 18·2880 + 16·32 = 745,752 backward.
  auto c = make_case(test::data_path("models/gpt-oss-20b.json"), 8, 4096, 8, "dp=8,zero=3,mbs=1", "torchtitan");
  REQUIRE(c.model.mlp_bias);
  REQUIRE(c.model.clamped_swiglu);
  c.run.options.torch_compile = false;
  const MoeRoutingBytes eager = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  CHECK(eager.forward == doctest::Approx(441'064.0 + 4 * (69'120.0 + 74'880.0)));
  CHECK(eager.backward == doctest::Approx(745'752.0 + 4 * (17'280.0 + 195'840.0)));
  // Compiled, Inductor fuses the biases and the clamps into the activation's kernel.
  c.run.options.torch_compile = true;
  const MoeRoutingBytes compiled = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  CHECK(compiled.forward == doctest::Approx(4 * (18 * 2880.0 + 500) + 16 * 2880.0 + 18 * 32));
}

TEST_CASE("profiles without a routing census price none") {
  const auto c = qwen3("deepspeed");
  CHECK(c.run.profile.moe_routing == MoeRouting::none);
  const MoeRoutingBytes b = moe_routing_bytes(c.model, c.run, c.strategy, 1.0);
  CHECK(b.forward == 0);
  CHECK(b.backward == 0);
}
