// Megatron-Core's rotary (rotary_kernels.hpp): when it runs unfused, and the HBM bytes its unfused
// ops add to a layer, against counts and times worked by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/rotary_kernels.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("Megatron's rotary runs unfused under YaRN's attention factor, and for MLA without rope fusion") {
  // gpt-oss: YaRN with factor 32 and no mscale: 0.1·ln 32 + 1 = 1.346574.
  auto oss = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  CHECK(oss.model.rope_attention_factor == doctest::Approx(1.346574).epsilon(1e-6));
  CHECK(megatron_rotary_unfused(oss.model, oss.run.options));
  // Without YaRN GQA keeps the fused kernel, whatever the MLA switch says.
  auto qwen = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  CHECK_FALSE(megatron_rotary_unfused(qwen.model, qwen.run.options));
  // DeepSeek-V3: YaRN with mscale = mscale_all_dim = 1: the factor is 1; MLA follows rope_fusion.
  auto v3 = make_case("deepseek-v3", 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  CHECK(v3.model.rope_attention_factor == 1.0);
  CHECK(megatron_rotary_unfused(v3.model, v3.run.options));
  v3.run.options.rope_fusion = true;
  CHECK_FALSE(megatron_rotary_unfused(v3.model, v3.run.options));
  // Rotated elements per token: gpt-oss (64 + 8) heads of 64 = 4,608; DeepSeek-V3 (128 + 128)·64
  // = 16,384, halved at TP 2.
  CHECK(rotated_elements_per_token(oss.model, oss.strategy) == 4608);
  auto v3_tp = make_case("deepseek-v3", 16, 4096, 64, "dp=8,tp=2,sp=true,ep=8,zero=1,mbs=1");
  CHECK(rotated_elements_per_token(v3_tp.model, v3_tp.strategy) == 8192);
}

TEST_CASE("the unfused rotary's bytes: 12 and 17 per element for GQA, 14 and 24 for MLA, against 2 and 4") {
  const Model gqa{};
  const Model mla_model = [] {
    Model m;
    m.attention = AttentionKind::mla;
    return m;
  }();
  CHECK(megatron_rotary_passes(gqa, false).forward == 2);
  CHECK(megatron_rotary_passes(gqa, false).backward == 4);
  CHECK(megatron_rotary_passes(gqa, true).forward == 12);
  CHECK(megatron_rotary_passes(gqa, true).backward == 17);
  CHECK(megatron_rotary_passes(mla_model, true).forward == 14);
  CHECK(megatron_rotary_passes(mla_model, true).backward == 24);
  // gpt-oss-120B on H100 (η_hbm·B_hbm = 0.80 · 3.35 TB/s), 4,096 tokens: the unfused ops add
  // (12 − 2)·4,608·2 B = 92,160 B per token forward, 377,487,360 B in all, 1.408535e-4 s; and
  // (17 − 4)·4,608·2 B = 119,808 B per token backward, 490,733,568 B, 1.831095e-4 s.
  auto yarn = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1");
  auto plain = yarn;
  plain.model.rope_attention_factor = 1;
  const LayerTime with = layer_time(yarn.model, yarn.run, yarn.cluster.device, yarn.strategy, FfnKind::moe);
  const LayerTime without = layer_time(plain.model, plain.run, plain.cluster.device, plain.strategy, FfnKind::moe);
  CHECK(with.forward - without.forward == doctest::Approx(1.408535e-4).epsilon(1e-6));
  CHECK(with.backward - without.backward == doctest::Approx(1.831095e-4).epsilon(1e-6));
  // Under torchtitan the rotary is its own eager code, priced by its passes: no change.
  auto tt = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1", "torchtitan");
  auto tt_plain = tt;
  tt_plain.model.rope_attention_factor = 1;
  CHECK(layer_time(tt.model, tt.run, tt.cluster.device, tt.strategy, FfnKind::moe).forward ==
        layer_time(tt_plain.model, tt_plain.run, tt_plain.cluster.device, tt_plain.strategy, FfnKind::moe).forward);
}
