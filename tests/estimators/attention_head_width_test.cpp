// A fused attention kernel's time at its head width (attention_head_width.hpp), against values
// worked by hand from the formula and the devices' tensor-core and exponential rates.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/attention_head_width.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/layer_time.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("the exponential's share: a 64-wide head on B200 and H100, MLA's 192/128 on H100") {
  Device b200;
  b200.tensor_flops_per_exp = 512;  // 8,192 FLOPs over 16 exponentials per clock per SM
  Model narrow;
  narrow.head_dim = 64;
  // y = 0.71 · 512 = 363.52. Forward (1 + 363.52/256)/(1 + 363.52/512) = 2.42/1.71; backward
  // M_b = 6·64 + 4·64 = 640: (1 + 0.568)/(1 + 0.284) = 1.568/1.284.
  const AttentionWidthScale s = attention_width_scale(narrow, b200);
  CHECK(s.forward == doctest::Approx(2.42 / 1.71).epsilon(1e-12));
  CHECK(s.backward == doctest::Approx(1.568 / 1.284).epsilon(1e-12));
  // The fit's own point: B200's forward at 64 over 128, r = 1/scale = 0.7065 (FlashAttention-4,
  // 1,011 against 1,431 TFLOP/s), to the two digits c was given.
  CHECK(1 / s.forward == doctest::Approx(1011.0 / 1431.0).epsilon(2e-3));
  // A 128-wide head is where the profiles' efficiency was fitted: no change.
  Model wide;
  wide.head_dim = 128;
  CHECK(attention_width_scale(wide, b200).forward == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(attention_width_scale(wide, b200).backward == doctest::Approx(1.0).epsilon(1e-15));
  // H100 (4,096 over 16): y = 181.76, a 64-wide head (1 + 0.71)/(1 + 0.355) = 1.71/1.355 forward.
  Device h100;
  h100.tensor_flops_per_exp = 256;
  CHECK(attention_width_scale(narrow, h100).forward == doctest::Approx(1.71 / 1.355).epsilon(1e-12));
  // MLA, d_qk 192 and d_v 128: M_f = 640, M_b = 1,664: (1 + 0.284)/(1 + 0.355) and
  // (1 + 181.76/1664)/(1 + 0.142): faster than at 128, as its wider matmuls dilute the exponential.
  Model mla;
  mla.attention = AttentionKind::mla;
  mla.qk_nope_dim = 128;
  mla.qk_rope_dim = 64;
  mla.v_head_dim = 128;
  REQUIRE(mla.qk_head_dim() == 192);
  REQUIRE(mla.v_dim() == 128);
  CHECK(attention_width_scale(mla, h100).forward == doctest::Approx(1.284 / 1.355).epsilon(1e-12));
  CHECK(attention_width_scale(mla, h100).backward == doctest::Approx((1 + 181.76 / 1664) / 1.142).epsilon(1e-12));
  // A device with no SFU figure (tensor_flops_per_exp 0): no correction.
  CHECK(attention_width_scale(narrow, Device{}).forward == 1.0);
  CHECK(attention_width_scale(narrow, Device{}).backward == 1.0);
}

TEST_CASE("a fused core takes its width's time; an unfused one does not") {
  // gpt-oss-120b (heads of 64) on B200: the layer's forward and backward grow by exactly
  // (scale − 1) times the core's kernel time at the 128-wide rate; unfused attention is unchanged.
  auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1", "megatron",
                     "b200-192gb");
  REQUIRE(c.cluster.device.tensor_flops_per_exp == 512);
  const LayerTime widened = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  Device plain = c.cluster.device;
  plain.tensor_flops_per_exp = 0;
  const LayerTime flat = layer_time(c.model, c.run, plain, c.strategy, FfnKind::moe);
  const AttentionWidthScale s = attention_width_scale(c.model, c.cluster.device);
  // The core's forward kernel at the 128-wide rate is its FLOPs' time plus the launch overhead
  // τ_kern/η, which the width does not touch.
  const Device& d = c.cluster.device;
  const double launch = d.kernel_overhead / (d.eta_max * kernel_scales(c.run, d, c.strategy).core);
  const double flops_f = flat.core_forward - launch;
  CHECK(widened.core_forward == doctest::Approx(launch + flops_f * s.forward).epsilon(1e-12));
  CHECK(widened.forward - flat.forward == doctest::Approx(flops_f * (s.forward - 1)).epsilon(1e-9));
  // The backward core is ρ_core = 2.5 times the forward's FLOPs (§7.1).
  CHECK(widened.backward - flat.backward == doctest::Approx(2.5 * flops_f * (s.backward - 1)).epsilon(1e-9));
  c.run.flash_attention = false;
  const LayerTime unfused = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const LayerTime unfused_flat = layer_time(c.model, c.run, plain, c.strategy, FfnKind::moe);
  CHECK(unfused.forward == unfused_flat.forward);
  CHECK(unfused.backward == unfused_flat.backward);
}
