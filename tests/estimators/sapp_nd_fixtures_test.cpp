// SAPP-ND's own answers (issue 23): under --rules sapp-nd, meshfit's per-stage totals on SAPP-ND's
// two memory-estimation fixtures against what SAPP-ND prints for them, and each convention of
// memory-model.md §17.5 checked on its own term and by switching it off.
//
// The printed totals: SAPP-ND `estimate_v2 --verbose --fit` on memory_estimation/test_cases/
// deepseek3/default.yaml and mixtral/default.yaml (hyper-parallel repository,
// hyper_parallel/auto_parallel/sapp_nd/), as the project's seed notes on the fixtures give them,
// in MiB as SAPP-ND prints them (int(bytes / 2^20)). Stages 4 to 12 of DeepSeek-V3 are not
// printed there one by one and are not checked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "engine/run_options_config.hpp"
#include "estimator_fixture.hpp"
#include "estimators/activation_census.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/sapp_nd_attention.hpp"
#include "estimators/sapp_nd_rules.hpp"
#include "estimators/sapp_nd_stage.hpp"
#include "estimators/sapp_nd_tables.hpp"
#include "estimators/seed_conventions.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The fixtures in meshfit's terms (tests/data/sapp-nd/, each file naming its source fields).
test::Case deepseek3(const std::string& rules = "sapp-nd") {
  test::Case c{load_model(test::data_path("sapp-nd/deepseek3-model.yaml")),
               {},
               make_cluster(test::data_path("sapp-nd/ascend-58gb.yaml"), 1024),
               {}};
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 512;
  f.precision = "fp32";  // param_init_type float32: parameters, gradients, AdamW moments 4 bytes
  f.rules = rules;
  f.run_options_file = test::data_path("sapp-nd/deepseek3-run.yaml");
  c.run = make_run(f, true);
  std::vector<std::string> warnings;
  c.strategy = parse_strategy("dp=16,tp=4,sp=true,pp=16,ep=8,zero=1,shard_group=2,recompute=full,mbs=1,m=32", c.model,
                              c.run, c.cluster, warnings);
  return c;
}

test::Case mixtral(const std::string& rules = "sapp-nd") {
  test::Case c{load_model("mixtral-8x7b"), {}, make_cluster(test::data_path("sapp-nd/ascend-58gb.yaml"), 16), {}};
  RunFlags f;
  f.seq = 4096;
  f.global_batch = 128;
  f.precision = "deepspeed_fp16";
  f.grad_bytes = 2;
  f.rules = rules;
  f.run_options_file = test::data_path("sapp-nd/mixtral-run.yaml");
  c.run = make_run(f, true);
  std::vector<std::string> warnings;
  c.strategy = parse_strategy("dp=8,tp=1,sp=false,pp=2,ep=8,zero=1,shard_group=8,recompute=full,mbs=1,m=16", c.model,
                              c.run, c.cluster, warnings);
  return c;
}

double stage_mib(const MemoryReport& r, std::size_t i) { return r.stages[i].device / kMiB; }

}  // namespace

TEST_CASE("sapp-nd: DeepSeek-V3 fixture, every printed stage within 1 %") {
  const MemoryReport r = test::estimate(deepseek3());
  REQUIRE(r.stages.size() == 16);
  const std::vector<std::pair<std::size_t, double>> printed = {{0, 43268},  {1, 84973},  {2, 134318}, {3, 128392},
                                                               {13, 69126}, {14, 86502}, {15, 68498}};
  for (const auto& entry : printed) {
    const std::size_t stage = entry.first;
    const double meshfit_mib = stage_mib(r, stage);
    CAPTURE(stage);
    CAPTURE(meshfit_mib);
    CHECK(std::fabs(meshfit_mib / entry.second - 1) <= 0.01);
  }
  CHECK(r.peak_stage == 2);  // "DOES NOT FIT 134317 > 58.00GB" on stage 2
  CHECK_FALSE(r.fits);
}

TEST_CASE("sapp-nd: Mixtral-8x7B fixture, both stages within 1 %") {
  const MemoryReport r = test::estimate(mixtral());
  REQUIRE(r.stages.size() == 2);
  CHECK(std::fabs(stage_mib(r, 0) / 39523 - 1) <= 0.01);
  CHECK(std::fabs(stage_mib(r, 1) / 38698 - 1) <= 0.01);
  CHECK(r.peak_stage == 0);
  CHECK(r.fits);
}

TEST_CASE("resident_comm: one DeepSeek-V3 MoE layer's buffers, by hand") {
  const test::Case c = deepseek3();
  // h = 7168, β_a = 2, tp = 4, ep = 8, k = 8, s·b = 8192, routed width 2048 (256 experts), one
  // shared expert of 2048; stage 2's layers have 16 − 2 = 14 micro-batches in flight.
  // tp (EvalLayerComm.tp_comm_layer with experts): h²·β·4 + h·β·3·(256/8·2048 + 2048)
  //   = 411,041,792 + 2,906,652,672 = 3,317,694,464, larger than the dp term (≈ 2.9e9 elements).
  // ep (ep_comm_layer_balanced): 14 · 8·8192 · 7/8 · 7168 · 2 · 2 = 14 · 1,644,167,168.
  const double not_recomputed = sapp_nd::layer_comm(c.model, c.run, c.strategy, FfnKind::moe, false, 14);
  CHECK(not_recomputed == doctest::Approx(3'317'694'464.0 + 14 * 1'644'167'168.0).epsilon(1e-12));
  // A dense layer (f = 18432) at 16 in flight, the tp term in elements: 16 · 8192 · (7168 + 18432).
  const double dense = sapp_nd::layer_comm(c.model, c.run, c.strategy, FfnKind::dense, false, 16);
  CHECK(dense == doctest::Approx(16.0 * 8192 * (7168 + 18432)).epsilon(1e-12));
  // The embedding: max(dp = 2·h·V/(tp·dp), tp = s·h·(tp − 1)/tp) = max(35,782,656, 44,040,192).
  CHECK(sapp_nd::embedding_comm(c.model, c.run, c.strategy) == doctest::Approx(44'040'192.0).epsilon(1e-12));
  // Switched off, the stage's total drops by the buffers' sum.
  const MemoryReport on = test::estimate(c);
  const MemoryReport off = test::estimate(deepseek3("sapp-nd:-resident_comm"));
  CHECK(on.stages[2].seed_comm > 0);
  CHECK(off.stages[2].seed_comm == 0);
  CHECK(on.stages[2].device - off.stages[2].device == doctest::Approx(on.stages[2].seed_comm).epsilon(1e-9));
}

TEST_CASE("expert_tp_literal: expert_model_parallel 1 read as expert TP 1") {
  const test::Case c = deepseek3();
  // dp 16, tp 4, ep 8, etp 1, ZeRO-1 over tp·G = 8: literal tp_exp = 1, dp_exp = 16·4/1/8 = 8,
  // SF_os,e = 8·1·1, SF_g,e = 1, SF_os,sh = gcd(256, 8·1) = 8. Read as etp ≤ 1 instead:
  // tp_exp = tp = 4, dp_exp = 16/8 = 2, SF_g,e = 4, SF_os,sh = gcd(256, 32) = 32.
  const sapp_nd::Factors lit = sapp_nd::factors(c.model, c.strategy, true);
  CHECK(lit.tp_exp == 1);
  CHECK(lit.dp_exp == 8);
  CHECK(lit.os_e == 8);
  CHECK(lit.g_e == 1);
  CHECK(lit.os_sh == 8);
  const sapp_nd::Factors plain = sapp_nd::factors(c.model, c.strategy, false);
  CHECK(plain.tp_exp == 4);
  CHECK(plain.dp_exp == 2);
  CHECK(plain.g_e == 4);
  CHECK(plain.os_sh == 32);
  // Off, routed-expert gradients are divided by tp again: stage 2's gradients fall.
  const MemoryReport on = test::estimate(c);
  const MemoryReport off = test::estimate(deepseek3("sapp-nd:-expert_tp_literal"));
  CHECK(off.stages[2].grads < on.stages[2].grads);
  CHECK(off.stages[2].device < on.stages[2].device);
}

TEST_CASE("seed_attention: SAPP-ND's MLA attention of one DeepSeek-V3 layer, by hand") {
  const test::Case c = deepseek3();
  // EvalAttn with h 7168, a = n_kv = 128, dh 128, dc_q 1536, dc_kv 512, dhr 64, 4 matmuls (no
  // parameter casts: the optimizer is sharded), β_a 2, β_sm 4, s 8192, tp 4, flash attention:
  //   qkv  = 8192·2·(50,688 + 41,024 + 16,896 + 2·128)/4 = 445,906,944
  //   score = 8192·8192·(4 + 2)/4                         = 100,663,296
  //   proj = 8192·7168·2/4 (÷ sp)                         =  29,360,128
  Census census;
  sapp_nd::add_attention(c.model, c.run, c.strategy, census);
  const double per_token = census.saved_total() / 4 + census.saved_tp_total() / 4;  // σ = tp = 4
  CHECK(8192 * per_token == doctest::Approx(575'930'368.0).epsilon(1e-12));
  // Off, the layers keep meshfit's own attention (357 MiB against 549): every stage falls.
  const MemoryReport on = test::estimate(c);
  const MemoryReport off = test::estimate(deepseek3("sapp-nd:-seed_attention"));
  CHECK(off.stages[2].activations < on.stages[2].activations);
}

TEST_CASE("table_shard: the embedding over tp·dp, the output like the non-expert part") {
  const test::Case c = deepseek3();
  // Embedding: h·V = 7168·159744 = 1,145,044,992 elements over tp·dp = 64, 4 bytes:
  //   71,565,312 for parameters and gradients, 143,130,624 for the two moments.
  // Output: h·V + V = 1,145,204,736 over os_max_shard·cp = 8 (parameters) and tp = 4 (gradients).
  const sapp_nd::TableStates t = sapp_nd::table_states(c.model, c.run, c.strategy);
  CHECK(t.embedding.weights == doctest::Approx(71'565'312.0).epsilon(1e-12));
  CHECK(t.embedding.grads == doctest::Approx(71'565'312.0).epsilon(1e-12));
  CHECK(t.embedding.optimizer == doctest::Approx(143'130'624.0).epsilon(1e-12));
  CHECK(t.output.weights == doctest::Approx(572'602'368.0).epsilon(1e-12));
  CHECK(t.output.grads == doctest::Approx(1'145'204'736.0).epsilon(1e-12));
  // Off (Mixtral, fp16, dp 8, tp 1): meshfit keeps ZeRO-1's tables whole per TP rank, so the
  // embedding's parameters and gradients (131,072,000 × 2 bytes each) are 8 times larger.
  const MemoryReport on = test::estimate(mixtral());
  const MemoryReport off = test::estimate(mixtral("sapp-nd:-table_shard"));
  CHECK(off.stages[0].weights - on.stages[0].weights == doctest::Approx(131'072'000.0 * 2 * 7 / 8).epsilon(1e-3));
  CHECK(off.stages[0].device > on.stages[0].device);
}

TEST_CASE("last_node_overhead: the stage's last node re-added at one micro-batch") {
  // Mixtral's stage 1 ends with the output node: s·b·(β_n·h + β_a·V) = 4096·(4·4096 + 2·32000)
  // = 329,252,864 bytes (seed_output's figure), its activations at one micro-batch.
  const test::Case c = mixtral();
  const MemoryReport on = test::estimate(c);
  CHECK(on.stages[1].transient == doctest::Approx(329'252'864.0).epsilon(1e-12));
  // Stage 0 ends with a (fully recomputed) MoE layer, re-evaluated as not recomputed at one
  // micro-batch: its whole kept bytes, plus its comm under resident_comm.
  const double n_cp = 4096;
  const LayerActivation none = kind_activation(c.model, c.run, c.strategy, FfnKind::moe, n_cp, 0)
                                   .by_mode[static_cast<std::size_t>(Recompute::none)];
  CHECK(on.stages[0].transient == doctest::Approx(none.kept).epsilon(1e-12));
  // Off: meshfit's largest transient candidate stands (item 13's last-layer candidate among
  // them), and the node's buffers go with it.
  const MemoryReport off = test::estimate(mixtral("sapp-nd:-last_node_overhead"));
  const StageMemory& o = off.stages[0];
  CHECK(o.transient == std::max({o.tr_layer, o.tr_attn, o.tr_logits, o.tr_fsdp, o.tr_bucket, o.tr_cp, o.tr_ep}));
  // Mixtral's node buffer at one micro-batch: max(dp, 0, 0) + ep = dp + 4096·2·7/8·4096·2·2.
  CHECK(on.stages[0].seed_comm - off.stages[0].seed_comm > 4096.0 * 2 * 7 / 8 * 4096 * 4);
}

TEST_CASE("no_clip_case: the full-recompute clipping case stays off as SAPP-ND ships it") {
  // Both fixtures state use_clip_grad True; under the convention nothing is added for it.
  const test::Case on = deepseek3();
  CHECK(on.run.options.grad_clip);
  const MemoryReport off = test::estimate(deepseek3("sapp-nd:-no_clip_case"));
  // Off, item 10 applies: each fully recomputed layer adds its DP comm elements (as bytes).
  CHECK(off.stages[2].activations > test::estimate(on).stages[2].activations);
}

TEST_CASE("seed_output: the output node keeps whole-vocabulary logits in the compute dtype") {
  const test::Case c = deepseek3();
  // s·b·(β_n·h + β_a·V) = 8192·(4·7168 + 2·159744) = 2,852,126,720 (SAPP-ND's 2720 MiB).
  CHECK(sapp_nd::output_node_kept(c.model, c.run, c.strategy) == 2'852'126'720.0);
  // Each MTP depth: its 3h inputs, 8192·3·7168·2 = 352,321,536, and the embedding's
  // activation, 8192·7168·2/4 = 29,360,128.
  CHECK(sapp_nd::mtp_inputs_kept(c.model, c.run, c.strategy) == 352'321'536.0 + 29'360'128.0);
  // Off, Mixtral's output keeps meshfit's fp32 logits: its last stage rises.
  const MemoryReport on = test::estimate(mixtral());
  const MemoryReport off = test::estimate(mixtral("sapp-nd:-seed_output"));
  CHECK(off.stages[1].device > on.stages[1].device);
}

TEST_CASE("no_step_phase: no optimizer-step phase under sapp-nd") {
  const MemoryReport on = test::estimate(mixtral());
  CHECK(on.stages[0].step_transient == 0);
  CHECK_FALSE(on.stages[0].step_phase_binds);
  // Off, Megatron's fp32 copy of the fp16 gradients' shard binds on Mixtral (grad bytes 2).
  const MemoryReport off = test::estimate(mixtral("sapp-nd:-no_step_phase"));
  CHECK(off.stages[0].step_transient > 0);
  CHECK(off.stages[0].device > on.stages[0].device);
}

TEST_CASE("--rules sapp-nd:-NAME names each convention; a wrong one is an input error") {
  RunFlags f;
  f.seq = 4096;
  f.global_batch = 8;
  f.rules = "sapp-nd:-resident_comm,-seed_output";
  const Run run = make_run(f, true);
  CHECK_FALSE(seed_rule(run, SeedConvention::resident_comm));
  CHECK_FALSE(seed_rule(run, SeedConvention::seed_output));
  CHECK(seed_rule(run, SeedConvention::table_shard));
  f.rules = "default";
  CHECK_FALSE(seed_rule(make_run(f, true), SeedConvention::table_shard));
  f.rules = "sapp-nd:-no_such_thing";
  CHECK_THROWS_AS(make_run(f, true), InputError);
  f.rules = "default:-resident_comm";
  CHECK_THROWS_AS(make_run(f, true), InputError);
}
