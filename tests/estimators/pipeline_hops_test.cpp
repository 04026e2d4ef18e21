// The pipeline's point-to-point per micro-batch (search-and-time.md §7.5, §7.6): 2·vpp hops of a
// micro-batch's activations, and when they hide behind compute.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/collectives.hpp"
#include "estimators/pipeline_hops.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("pipeline hops: exposed under 1F1B, hidden by Megatron's interleaved schedule") {
  // Llama-3.1-70B (h 8192) on 64 H100s, tp 8 with SP, pp 4: one 8,192-token micro-batch sends
  // 8192 · 8192 · 2 / 8 = 16,777,216 bytes per hop, across nodes (the pipeline spans 4 nodes).
  auto plain = make_case("llama-3.1-70b", 64, 8192, 128, "dp=2,tp=8,sp=true,pp=4,zero=1,mbs=1");
  const Device& d = plain.cluster.device;
  CHECK(pipeline_hop_time(plain.model, plain.run, d, plain.strategy) ==
        doctest::Approx(2 * point_to_point(d, false, 16'777'216.0)).epsilon(1e-12));
  // Interleaved (vpp 5): Megatron-LM overlaps its P2P by default, so none is exposed...
  auto inter =
      make_case("llama-3.1-70b", 64, 8192, 128, "dp=2,tp=8,sp=true,pp=4,vpp=5,schedule=interleaved_1f1b,zero=1,mbs=1");
  REQUIRE(inter.run.profile.interleaved_p2p_overlap);
  CHECK(pipeline_hops_hidden(inter.run, inter.strategy));
  CHECK(pipeline_hop_time(inter.model, inter.run, d, inter.strategy) == 0);
  // ... while a profile without that default pays 2·vpp hops.
  inter.run.profile.interleaved_p2p_overlap = false;
  CHECK(pipeline_hop_time(inter.model, inter.run, d, inter.strategy) ==
        doctest::Approx(10 * point_to_point(d, false, 16'777'216.0)).epsilon(1e-12));
  // The run option hides them under any schedule.
  plain.run.options.pp_overlap = true;
  CHECK(pipeline_hop_time(plain.model, plain.run, d, plain.strategy) == 0);
}
