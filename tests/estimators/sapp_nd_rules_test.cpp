// The sapp_nd_compat profile (`--rules sapp-nd`, memory-model.md §17): EX12 and the seed's own
// check, each value from the spec or derived by hand from §17.3's expressions. EX12 prices the
// seed's body-layer items (§17.3) alone: SAPP-ND's conventions of §17.5 are switched off.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/activation_census.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/seed_conventions.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {
constexpr std::uint32_t kAllConventionsOff = (1U << kSeedConventionCount) - 1;

test::Case seed_case(const std::string& model, std::int64_t n, std::int64_t seq, std::int64_t gb,
                     const std::string& s) {
  auto c = make_case(model, n, seq, gb, s);
  c.run.rules = Rules::sapp_nd;
  c.run.seed_off = kAllConventionsOff;
  c.run.profile.attention_checkpoint_keeps_qkv_output = false;  // as the spec's examples (memory_examples_test)
  return c;
}
}  // namespace

TEST_CASE("EX12(a): EX4's Mixtral under the seed's shard factors") {
  const auto c = seed_case("mixtral-8x7b", 64, 4096, 256,
                           "dp=16,tp=2,sp=true,pp=2,vpp=1,schedule=1f1b,cp=1,ep=8,etp=2,zero=1,shard_group=16,"
                           "recompute=selective,mbs=1,m=16");
  const sapp_nd::Factors f = sapp_nd::factors(c.model, c.strategy);
  CHECK(f.os_max_shard == 32);
  CHECK(f.os_ne == 32);
  CHECK(f.tp_exp == 2);
  CHECK(f.dp_exp == 2);
  CHECK(f.os_e == 4);
  CHECK(f.g_ne == 2);
  CHECK(f.g_e == 2);
  CHECK(f.os_sh == 8);
  const sapp_nd::Counts n = sapp_nd::counts(c.model, FfnKind::moe, c.strategy);
  CHECK(n.non_expert == 41'984'000);
  CHECK(n.routed_per_ep == 88'080'384);
  const ModelStates layer = sapp_nd::layer_states(n, f, c.run);
  CHECK_BYTES(layer.weights, 46'664'192);
  CHECK_BYTES(layer.grads, 260'128'768);
  CHECK_BYTES(layer.optimizer, 279'985'152);
  CHECK(sapp_nd::reduced_grads(n, f, c.strategy, c.run) == 0);

  const MemoryReport r = test::estimate(c);
  const StageMemory& s0 = r.stages[0];
  CHECK_BYTES(s0.weights, 877'699'072);
  CHECK_BYTES(s0.grads, 4'424'204'288);
  CHECK_BYTES(s0.optimizer, 4'528'914'432);
  CHECK_BYTES(s0.static_total(), 9'830'817'792);
  CHECK_BYTES(s0.activations, 17'450'729'472);
  CHECK_BYTES(s0.transient, 419'692'544);
  CHECK_BYTES(s0.allocated, 27'701'239'808);
  CHECK_BYTES(s0.reserved, 27'701'239'808);  // φ = 0
  CHECK_BYTES(s0.device, 28'774'981'632);    // + 1 GiB
  const StageMemory& s1 = r.stages[1];
  CHECK_BYTES(s1.static_total(), 9'830'845'440);
  CHECK_BYTES(s1.activations, 9'021'030'400);
  CHECK_BYTES(s1.transient, 393'216'000);
  CHECK_BYTES(s1.allocated, 19'245'091'840);
  CHECK_BYTES(s1.device, 20'318'833'664);
}

TEST_CASE("EX12(b): the seed keeps a fully recomputed layer's input for the whole sequence") {
  // EX6's Llama-3.1-8B layer at s 32768, ring cp 4: K_1 = 2·32768·4096 = 268,435,456 against
  // the default 67,108,864, in each of the 32 layers (gradient clipping off to isolate item 9).
  auto d = make_case("llama-3.1-8b", 4, 32768, 1, "cp=4,cp_algo=ring,dp=1,recompute=full,mbs=1");
  d.run.options.grad_clip = false;
  auto s = d;
  s.run.rules = Rules::sapp_nd;
  s.run.seed_off = kAllConventionsOff;
  const double diff = test::estimate(s).stages[0].activations - test::estimate(d).stages[0].activations;
  CHECK_BYTES(diff, 32.0 * (268'435'456 - 67'108'864));
}

TEST_CASE("EX12(c): the CP buffer with SAPP-ND's count of a node's members") {
  auto c = seed_case("llama-3.1-8b", 32, 131072, 1, "tp=2,sp=true,cp=16,cp_algo=ulysses,dp=1,mbs=1");
  CHECK_BYTES(sapp_nd::cp_buffer(c.model, c.run, c.strategy, 8), 251'658'240);
}

TEST_CASE("EX12(d): the seed's interleaved micro factors on EX9") {
  const auto c = seed_case("llama-3.1-70b", 64, 4096, 16,
                           "dp=2,tp=8,sp=true,pp=4,vpp=2,schedule=interleaved_1f1b,cp=1,ep=1,etp=1,zero=1,shard_group="
                           "2,recompute=selective,mbs=1,m=8");
  CHECK(sapp_nd::micro_factors(c.strategy, 0) == std::vector<std::int64_t>{6, 4});
  CHECK(sapp_nd::micro_factors(c.strategy, 1) == std::vector<std::int64_t>{5, 4});
  CHECK(sapp_nd::micro_factors(c.strategy, 2) == std::vector<std::int64_t>{4, 3});
  CHECK(sapp_nd::micro_factors(c.strategy, 3) == std::vector<std::int64_t>{4, 1});
  CHECK_BYTES(test::estimate(c).stages[0].activations, 14'051'115'008);
}

TEST_CASE("item 10: the seed's gradient-clipping rule on fully recomputed layers") {
  // Llama-3.1-8B, dp 8, zero 1, s 4096: SF_os,ne = tp·G = 8; clip = (4/8)·218,112,000 =
  // 109,056,000; fwd = 1·2·4096·4096 = 33,554,432; dpc = P_ne/(cp·tp) + P_ne/tp = 436,224,000
  // elements; fwd + dpc > clip, so each layer keeps fwd and adds dpc: 32 × 436,224,000 more.
  auto on = seed_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1,recompute=full,mbs=1");
  auto off = on;
  off.run.options.grad_clip = false;
  const sapp_nd::Factors f = sapp_nd::factors(on.model, on.strategy);
  const sapp_nd::Counts n = sapp_nd::counts(on.model, FfnKind::dense, on.strategy);
  CHECK(sapp_nd::grad_clip_buffer(n, f, on.run) == 109'056'000);
  CHECK(sapp_nd::dp_comm_elements(n, f, on.strategy, false) == 436'224'000);
  const double diff = test::estimate(on).stages[0].activations - test::estimate(off).stages[0].activations;
  CHECK_BYTES(diff, 32.0 * 436'224'000);
}

TEST_CASE("the seed's own check of §7.2 (TP 2, micro factor 3, s 4096, b 2)") {
  Census c;
  c.saved[static_cast<std::size_t>(Op::other)] = 100;
  c.saved_tp[static_cast<std::size_t>(Op::other)] = 300;
  c.working = 150;
  c.working_tp = 330;
  auto base = make_case("llama-3.1-8b", 8, 4096, 8, "tp=2,sp=true,dp=4,mbs=2");
  const double micro = 3, tokens = 4096 * 2;
  auto kept = [&](const Strategy& s, double g) {
    return micro * layer_activation(per_token(c, base.run, s, g), Recompute::none, tokens / static_cast<double>(s.cp),
                                    4096, base.run, s)
                       .kept;
  };
  Strategy sp = base.strategy;
  CHECK(kept(sp, 0) == 3.0 * 4096 * 2 * (50 + 150));
  Strategy nosp = sp;
  nosp.sp = false;
  CHECK(kept(nosp, 0) == 3.0 * 4096 * 2 * (100 + 150));
  Strategy cp2 = sp;
  cp2.cp = 2;
  CHECK(kept(cp2, 0) == 3.0 * 4096 * 2 / 2 * (50 + 150));
  const CensusPerToken t = per_token(c, base.run, sp, 0);
  CHECK(micro * layer_activation(t, Recompute::full, tokens, 4096, base.run, sp).working ==
        3.0 * 4096 * 2 * (75 + 165));
  CHECK(micro * layer_activation(t, Recompute::none, tokens, 4096, base.run, sp).working == 3.0 * 4096 * 2 * 40);
}

TEST_CASE("sapp-nd refuses m < pp and names the rule") {
  auto c = make_case("llama-3.1-70b", 64, 4096, 4, "dp=2,tp=8,sp=true,pp=4,zero=1,mbs=1");
  c.run.rules = Rules::sapp_nd;
  CHECK(first_broken_rule(c.model, c.run, c.cluster, c.strategy) == HardRule::S1);
}

TEST_CASE("the seed's expert data-parallel degree is at least 1 (ep > dp·tp gave 0: NaN and inf states)") {
  // Mixtral, dp = 4, tp = 1, cp = 2, ep = 8, etp = 1, ZeRO-3 over 8: the seed's ⌊dp·tp/ep⌋ = ⌊4/8⌋ = 0
  // (found by the reference-model comparison). With dp_exp = 1: tp_exp = 1 (tp·ep = 8 > dp·tp = 4),
  // SF_os,e = dp_exp·cp·tp_exp = 2 and SF_g,e = SF_os,e = 2 (z >= 2).
  const auto c = test::make_case("mixtral-8x7b", 16, 4096, 64,
                                 "dp=4,tp=1,pp=2,vpp=4,cp=2,cp_algo=ulysses,ep=8,etp=1,zero=3,shard_group=8,mbs=2");
  const sapp_nd::Factors f = sapp_nd::factors(c.model, c.strategy);
  CHECK(f.tp_exp == 1);
  CHECK(f.dp_exp == 1);
  CHECK(f.os_e == 2);
  CHECK(f.g_e == 2);
}
