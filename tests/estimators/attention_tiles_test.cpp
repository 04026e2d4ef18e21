// A fused attention kernel on windowed layers (attention_tiles.hpp): the key tiles a query tile
// visits and the layers' time share, against values counted by hand, and the layer's core time.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/attention_head_width.hpp"
#include "estimators/attention_tiles.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/layer_time.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("key tiles a query tile visits: causal, windowed, chunked") {
  // Causal over 4,096 tokens: 32 query tiles of 128, the j-th visiting j + 1 key tiles: 33/2.
  CHECK(key_tiles_per_query_tile(4096, 0, 0) == doctest::Approx(16.5).epsilon(1e-15));
  // A 128-token window: a tile's first query sees back to 127 keys before it, so every tile from
  // the second on visits 2 key tiles, the first 1: (1 + 2 + 30·2)/32 = 63/32.
  CHECK(key_tiles_per_query_tile(4096, 128, 0) == doctest::Approx(63.0 / 32.0).epsilon(1e-15));
  // A 1,024-token window: ⌈1023/128⌉ + 1 = 9 tiles, the first eight 1..8: (45 + 23·9)/32 = 252/32.
  CHECK(key_tiles_per_query_tile(4096, 1024, 0) == doctest::Approx(252.0 / 32.0).epsilon(1e-15));
  // A window no shorter than the sequence is causal.
  CHECK(key_tiles_per_query_tile(4096, 4096, 0) == doctest::Approx(16.5).epsilon(1e-15));
  // Chunks of 8,192 in 16,384 tokens (Llama 4): causal within a chunk's 64 tiles, 65/2.
  CHECK(key_tiles_per_query_tile(16384, 0, 8192) == doctest::Approx(32.5).epsilon(1e-15));
}

TEST_CASE("gpt-oss's alternating windows cost two thirds of causal layers, not half plus a sliver") {
  Model m;
  m.layer_window = {128, 0, 128, 0};
  // Windowed (63/32 + 5.75)/(16.5 + 5.75) = 7.71875/22.25, full 1; their mean.
  CHECK(tiled_core_share(m, 4096) == doctest::Approx((7.71875 / 22.25 + 1) / 2).epsilon(1e-12));
  // Without windows or chunks nothing changes.
  CHECK(tiled_core_share(Model{}, 4096) == 1.0);
}

TEST_CASE("a layer's fused core takes the tiled share of the causal core's time; unfused keeps its square") {
  // gpt-oss-120b on B200 at 4,096 tokens: the core's forward kernel is its causal FLOPs' time
  // times tiled_core_share, plus the launch overhead.
  auto c = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 64, "dp=8,ep=8,zero=1,mbs=1", "megatron",
                     "b200-192gb");
  REQUIRE(!c.model.layer_window.empty());
  const LayerTime windowed = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  Model causal = c.model;
  causal.layer_window.clear();
  const LayerTime full = layer_time(causal, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const Device& d = c.cluster.device;
  const double launch = d.kernel_overhead / (d.eta_max * kernel_scales(c.run, d, c.strategy).core);
  const double share = (7.71875 / 22.25 + 1) / 2;
  CHECK(windowed.core_forward - launch == doctest::Approx((full.core_forward - launch) * share).epsilon(1e-12));
  // FP8 attention: the forward as above, the backward the causal core's. The core's backward is
  // ρ_core = 2.5 times the forward's FLOPs at the backward's width scale, so it grows by
  // 2.5 · (s_b/s_f) · (causal forward kernel's FLOP time) · (1 − share).
  c.run.options.fp8_attention = true;
  const LayerTime fp8 = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const AttentionWidthScale w = attention_width_scale(c.model, d);
  CHECK(fp8.core_forward == doctest::Approx(windowed.core_forward).epsilon(1e-12));
  CHECK(fp8.backward - windowed.backward ==
        doctest::Approx(2.5 * w.backward / w.forward * (full.core_forward - launch) * (1 - share)).epsilon(1e-9));
  // Unfused attention computes the whole s × s square whatever the window: windowed or not, the
  // same core.
  c.run.options.fp8_attention = false;
  c.run.flash_attention = false;
  const LayerTime unfused_windowed = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const LayerTime unfused_full = layer_time(causal, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(unfused_windowed.core_forward == doctest::Approx(unfused_full.core_forward).epsilon(1e-12));
}
