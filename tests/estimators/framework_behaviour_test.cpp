// Framework behaviours the measured cases showed, each against a value computed by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/activation_census.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "engine/validation_cases.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

TEST_CASE("torchtitan per-op SAC keeps every second matmul output and the attention output") {
  // Llama-3.1-8B, tp 1: block input h, wq a·d_h, wv n_kv·d_h, attention a·d_h, w1 f, w2 h at
  // 2 bytes, plus the fp32 log-sum-exp per head: 2·(4096+4096+1024+4096+14336+4096) + 4·32.
  auto c = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3,recompute=selective", "torchtitan");
  c.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::dense);
  CHECK(per_token(census, c.run, c.strategy, 0).kept_sel == 63'616);

  // tp 2 with SP: SP-sharded block input and the two reduce-scatter outputs (3·2h/2), TP-sharded
  // wq, wv, attention, w1 and the statistics ((2·23,552 + 128)/2), and w2's full partial sum 2h.
  auto t2 = make_case("llama-3.1-8b", 8, 8192, 8, "tp=2,sp=true,zero=3,recompute=selective", "torchtitan");
  t2.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const Census c2 = analytic_census(t2.model, t2.run, t2.strategy, FfnKind::dense);
  CHECK(per_token(c2, t2.run, t2.strategy, 0).kept_sel == 12'288 + 23'616 + 8'192);

  // tp 2 without SP: the block input whole (2h = 8,192) and no reduce-scatter output, since plain
  // TP all-reduces and all_reduce is not on the save list (its output is recomputed); the same
  // TP-sharded 23,616 and w2's partial sum 2h = 8,192. Measured by tools/probe: Llama 3.1 8B at
  // TP 2, 4 and 8 without SP sat a constant 1.9 GiB (the two outputs of 8 layers) over before this.
  auto n2 = make_case("llama-3.1-8b", 8, 8192, 8, "tp=2,sp=false,zero=3,recompute=selective", "torchtitan");
  n2.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const Census cn = analytic_census(n2.model, n2.run, n2.strategy, FfnKind::dense);
  CHECK(per_token(cn, n2.run, n2.strategy, 0).kept_sel == 8'192 + 23'616 + 8'192);
  // Its recompute reruns the attention's all-reduce (its output, the residual the FFN's norm reads,
  // is not saved) and not the FFN's: one of the forward's two equal all-reduces.
  const LayerTime plain = layer_time(n2.model, n2.run, n2.cluster.device, n2.strategy, FfnKind::dense);
  CHECK(plain.tp_forward > 0);
  CHECK(plain.tp_recompute[static_cast<int>(Recompute::selective)] == doctest::Approx(plain.tp_forward / 2));

  // Compiled, the partitioner keeps only what the backward reads: not the FFN's output. tp 1:
  // 63,616 − 2·4096 = 55,424. tp 2: w2's partial sum (8,192) and its reduce-scatter output
  // (2·4096/2 = 4,096) go, wo's reduce-scatter output stays: 44,096 − 12,288 = 31,808.
  c.run.options.torch_compile = true;
  CHECK(per_token(analytic_census(c.model, c.run, c.strategy, FfnKind::dense), c.run, c.strategy, 0).kept_sel ==
        55'424);
  t2.run.options.torch_compile = true;
  CHECK(per_token(analytic_census(t2.model, t2.run, t2.strategy, FfnKind::dense), t2.run, t2.strategy, 0).kept_sel ==
        31'808);

  // An attention kernel the save list misses (cuDNN SDPA before pytorch/torchtitan#2095) keeps
  // neither its output nor its statistics: 55,424 − (2·4096 + 4·32) = 47,104, and the backward
  // reruns the attention forward, which nothing else in a selective layer repeats here.
  const LayerTime saved = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  c.run.options.sac_saves_attention = false;
  CHECK(per_token(analytic_census(c.model, c.run, c.strategy, FfnKind::dense), c.run, c.strategy, 0).kept_sel ==
        47'104);
  const LayerTime rerun = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  const int sel = static_cast<int>(Recompute::selective);
  CHECK(rerun.recompute[sel] == doctest::Approx(saved.recompute[sel] + saved.core_forward));
  CHECK(saved.core_forward > 0);
}

TEST_CASE("torchtitan's eager cross-entropy holds 8 transient bytes per logit") {
  // Llama-3.1-8B at s 32768, tp 1, V = 128,256 unpadded: 32768·8·128256.
  const auto c = make_case("llama-3.1-8b", 8, 32768, 8, "dp=8,zero=3,recompute=full", "torchtitan");
  CHECK_BYTES(test::estimate(c).stages[0].tr_logits, 32768.0 * 8 * 128256);
  const auto m = make_case("llama-3.1-8b", 8, 32768, 8, "dp=8,zero=3,recompute=full", "megatron");
  CHECK_BYTES(test::estimate(m).stages[0].tr_logits, 32768.0 * 6 * 128256);
}

TEST_CASE("torchtitan's loss parallel (tp > 1) holds 12 transient bytes per local logit") {
  // Llama-3.1-70B, tp 8, mbs 2, s 8192: 16,384 tokens · 12 bytes · 128,256/8 local logits.
  const auto c = make_case("llama-3.1-70b", 64, 8192, 16, "tp=8,sp=true,zero=3,recompute=full,mbs=2", "torchtitan");
  CHECK_BYTES(test::estimate(c).stages[0].tr_logits, 16384.0 * 12 * 128256 / 8);
  // Megatron's fused vocab-parallel cross-entropy keeps its 6, over V padded to a multiple of
  // 128·8: 129,024.
  const auto m = make_case("llama-3.1-70b", 64, 8192, 16, "tp=8,sp=true,zero=3,recompute=full,mbs=2");
  CHECK_BYTES(test::estimate(m).stages[0].tr_logits, 16384.0 * 6 * 129024 / 8);
}

TEST_CASE("torchtitan's output projection keeps its gathered full-sequence input") {
  // K_out = n·(β_n·h/σ + β_a·h_in + 4·V/tp): 16,384 tokens, h 8192, tp 8, V 128,256. torchtitan
  // saves the gathered input (h_in = h), Megatron its SP shard (h_in = h/8).
  const double n = 16384, h = 8192, logits = 4.0 * 128256 / 8;
  const auto c = make_case("llama-3.1-70b", 64, 8192, 16, "tp=8,sp=true,zero=3,mbs=2", "torchtitan");
  CHECK_BYTES(output_kept(c.model, c.run, c.strategy, n, 128256), n * (2 * h / 8 + 2 * h + logits));
  const auto m = make_case("llama-3.1-70b", 64, 8192, 16, "tp=8,sp=true,zero=3,mbs=2");
  CHECK_BYTES(output_kept(m.model, m.run, m.strategy, n, 128256), n * (2 * h / 8 + 2 * h / 8 + logits));
}

TEST_CASE("deferred FSDP gradient sync under torchtitan PP holds unsharded fp32 gradients") {
  // Llama-3.1-405B, tp 8, pp 8: torchtitan's split counts the embedding and loss as layers, so
  // stage 1 holds 16 layers. Per layer per rank: (570,425,344 + 2,617,245,696)/8 + 32,768 norms
  // = 398,491,648; × 16 layers × 4 bytes (fp32 reduce dtype).
  const auto c =
      make_case("llama-3.1-405b", 512, 8192, 64, "tp=8,sp=true,pp=8,zero=3,recompute=full,mbs=1", "torchtitan");
  const MemoryReport r = test::estimate(c);
  CHECK(r.stages[0].layers == 15);
  CHECK(r.stages[1].layers == 16);
  CHECK(r.stages[7].layers == 15);
  CHECK_BYTES(r.stages[1].deferred_grads, 4.0 * 16 * 398'491'648);
  const auto pp1 = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3", "torchtitan");
  CHECK(test::estimate(pp1).stages[0].deferred_grads == 0);
  const auto mega = make_case("llama-3.1-405b", 512, 8192, 64, "tp=8,sp=true,pp=8,zero=3,recompute=full,mbs=1");
  CHECK(test::estimate(mega).stages[1].deferred_grads == 0);
}

TEST_CASE("FP8-saved linear inputs keep 1 byte per element (§7.4.7)") {
  // Llama-3.1-8B, tp 1: the QKV, output-projection, FFN and down-projection inputs drop to 1 byte:
  // saved 16,384 + 4,096 + 4,096; saved_tp 12,288 + 128 + 4,096 + 57,344 + 14,336, and the
  // attention output O that flash attention keeps in bf16 beside the projection's FP8 copy:
  // 2·32·128 = 8,192 (Transformer Engine's FusedAttnFunc saves O; linear.py the cast input).
  auto c = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8");
  c.run.options.fp8_saved_matmul_inputs = true;
  const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::dense);
  CHECK(census.saved_total() == 24'576);
  CHECK(census.saved_tp_total() == 88'192 + 8'192);
  // Megatron's `mlp` recompute module: the dense MLP keeps only its input; gone are its normed FP8
  // input 4,096, the gate and up outputs 2·2·14,336 = 57,344 and the down input 14,336 (75,776).
  c.strategy.recompute = Recompute::selective;
  const double kept = per_token(census, c.run, c.strategy, 0).kept_sel;
  c.run.options.switches.dense_mlp = false;
  CHECK(per_token(census, c.run, c.strategy, 0).kept_sel == kept - 75'776);
  // On a MoE layer (Mixtral-8x7B) it drops nothing.
  auto x = make_case("mixtral-8x7b", 8, 4096, 8, "dp=8,recompute=selective");
  const Census moe = analytic_census(x.model, x.run, x.strategy, FfnKind::moe);
  const double moe_kept = per_token(moe, x.run, x.strategy, 0).kept_sel;
  x.run.options.switches.dense_mlp = false;
  CHECK(per_token(moe, x.run, x.strategy, 0).kept_sel == moe_kept);
}

TEST_CASE("grad_clip_model: seed under the default rules, each part scaled once (§9.9)") {
  // Llama-3.1-8B, dp 8, zero 1, s 4096: clip = 4·218,112,000/8 = 109,056,000 > fwd =
  // 1·4096·2·4096 = 33,554,432 (dpc = 0 below ZeRO-3), so each of 32 layers keeps clip instead.
  auto on = make_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1,recompute=full,mbs=1");
  auto off = on;
  on.run.options.grad_clip_seed = true;
  const double diff = test::estimate(on).stages[0].activations - test::estimate(off).stages[0].activations;
  CHECK_BYTES(diff, 32.0 * (109'056'000 - 33'554'432));
}

TEST_CASE("the mindformers switch preset follows flash attention and SP (§7.5)") {
  // Llama-3.1-8B with flash attention. Against megatron_core_attn, mindformers keeps the
  // log-sum-exp (softmax: 4·32 bytes, TP-split) and, with SP (σ = tp = 2), drops both norms'
  // inputs (2·4096 each, SP-split) and the activation output (2·14336, TP-split), and it reruns no
  // core attention, so it keeps none of the fused QKV output Megatron's checkpoint holds (8 groups
  // of 4 query heads and one key head: 2·8·5·128 = 10,240 bytes, TP-split):
  // 128/2 − 2·8192/2 − 28672/2 − 10240/2 = −27,584 bytes per token. Without SP: 128 − 10,240.
  auto kept = [](const char* strategy, bool mindformers) {
    auto c = make_case("llama-3.1-8b", 8, 8192, 8, strategy);
    if (mindformers) c.run.options.switches = RecomputeSwitches::mindformers(false);
    const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::dense);
    return per_token(census, c.run, c.strategy, 0).kept_sel;
  };
  const char* sp = "tp=2,sp=true,zero=1,recompute=selective";
  CHECK(kept(sp, true) - kept(sp, false) == doctest::Approx(-27'584));
  const char* plain = "dp=8,zero=1,recompute=selective";
  CHECK(kept(plain, true) - kept(plain, false) == doctest::Approx(128 - 10'240));
}

TEST_CASE("Megatron's checkpoint of core attention keeps the whole fused QKV output") {
  // Qwen3-30B-A3B (32 query heads, 4 key-value heads of 128, QK norms), tp 1: the checkpoint saves
  // the value view and with it the 4 groups' queries and keys, 4·(32/4 + 1)·128 = 4,608 elements
  // at 2 bytes beyond what the uncheckpointed attention keeps: 9,216 bytes per token. Measured
  // (Megatron-Bridge PR #3880, 16 H100, 48 layers, 4096 tokens): recompute_modules=[core_attn]
  // peaked 58.804 GiB against 57.137 without recompute, +1.667 GiB; the term gives
  // 9,216 · 4096 · 48 = 1.6875 GiB, less the log-sum-exp the rerun drops (4·32 per token).
  auto kept_sel = [](const char* model, const char* strategy, bool keeps) {
    auto c = make_case(model, 16, 4096, 16, strategy);
    c.run.profile.attention_checkpoint_keeps_qkv_output = keeps;
    const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::moe);
    return per_token(census, c.run, c.strategy, 0).kept_sel;
  };
  REQUIRE(make_case("qwen3-30b-a3b", 16, 4096, 16, "dp=16,ep=16").run.profile.attention_checkpoint_keeps_qkv_output);
  const char* rc = "dp=16,ep=16,recompute=selective";
  CHECK(kept_sel("qwen3-30b-a3b", rc, true) - kept_sel("qwen3-30b-a3b", rc, false) == doctest::Approx(9'216));
  // At tp 8 a rank holds one whole group of its 4 (the groups are fewer than the ranks): 8 query
  // heads and the key head, (8 + 1)·128·2 = 2,304 bytes, which is 18,432/8 in TP-split terms.
  const char* tp8 = "tp=8,sp=true,dp=2,ep=2,recompute=selective";
  CHECK(kept_sel("qwen3-30b-a3b", tp8, true) - kept_sel("qwen3-30b-a3b", tp8, false) == doctest::Approx(2'304));
  // Not rerun (recompute_modules=[moe_act] keeps the softmax switch): nothing more kept.
  auto moe_act = make_case("qwen3-30b-a3b", 16, 4096, 16, rc);
  moe_act.run.options.switches = RecomputeSwitches{};
  moe_act.run.options.switches.softmax = true;
  const Census census = analytic_census(moe_act.model, moe_act.run, moe_act.strategy, FfnKind::moe);
  CHECK(per_token(census, moe_act.run, moe_act.strategy, 0).kept_sel_beyond_held == 0);
  // GPT-3 175B (multi-head, learned positions, no QK norm) without flash attention: not counted;
  // with it, TE reads the three views of the packed output in place (sbh3d) and keeps them anyway.
  auto gpt = make_case("gpt3-175b", 8, 2048, 8, "tp=8,recompute=selective");
  gpt.run.flash_attention = true;
  const Census g = analytic_census(gpt.model, gpt.run, gpt.strategy, FfnKind::dense);
  CHECK(g.core_attn_checkpoint_tp == 0);
}

TEST_CASE("Megatron's layernorm and moe_act recompute modules rerun memory-bound kernels in the backward") {
  // Qwen3-30B-A3B at EP 16, tp 1 (σ 1), one sequence of 4096: moe_act reruns the routed experts'
  // activation, (2 + 1)·8·768·2 = 36,864 B per token; layernorm the two norms, 2·2·2048·2 =
  // 16,384 B per token, each over the 4,096 tokens at η_hbm·B_hbm.
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 16, "dp=16,ep=16,recompute=selective,mbs=1");
  c.run.options.switches = RecomputeSwitches{};
  const int sel = static_cast<int>(Recompute::selective);
  const double hbm = c.cluster.device.eta_hbm * c.cluster.device.hbm_bandwidth;
  const auto recompute = [&](const test::Case& x) {
    return layer_time(x.model, x.run, x.cluster.device, x.strategy, FfnKind::moe).recompute[sel];
  };
  const double base = recompute(c);
  auto act = c;
  act.run.options.switches.moe_act = false;
  CHECK(recompute(act) - base == doctest::Approx(36'864.0 * 4096 / hbm).epsilon(1e-9));
  auto norms = c;
  norms.run.options.switches.normOp = false;
  CHECK(recompute(norms) - base == doctest::Approx(16'384.0 * 4096 / hbm).epsilon(1e-9));
  // A profile that prices no elementwise traffic reruns none of it.
  act.run.profile.elementwise = false;
  auto plain = c;
  plain.run.profile.elementwise = false;
  CHECK(recompute(act) == recompute(plain));
}

TEST_CASE("Megatron's optimizer step casts bf16 gradients to fp32, one shard's worth") {
  // Llama-3.1-8B (8,030,261,248 parameters; 128,256 is already a multiple of 128) on dp 8 with the
  // distributed optimizer: each rank's optimizer shard is 8,030,261,248 / 8 = 1,003,782,656
  // elements. With gradients kept in bf16 the step's fp32 copy of them (distrib_optimizer.py,
  // _copy_model_grads_to_main_grads) takes 4 bytes each: 4,015,130,624 bytes.
  auto c = make_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1");
  c.run.precision.beta_G = 2;
  CHECK_BYTES(test::estimate(c).stages[0].step_transient, 4'015'130'624.0);
  // fp32 gradients need no copy; and the other frameworks keep none.
  c.run.precision.beta_G = 4;
  CHECK_BYTES(test::estimate(c).stages[0].step_transient, 0.0);
  c.run.precision.beta_G = 2;
  c.run.profile.step_casts_grads_to_fp32 = false;
  CHECK_BYTES(test::estimate(c).stages[0].step_transient, 0.0);
}

TEST_CASE("Megatron's precision-aware optimizer steps on the bf16 gradients without an fp32 copy") {
  // Transformer Engine's FusedAdam reads each shard's gradient in its own dtype as decoupled_grad
  // (distrib_optimizer.py, _copy_model_grads_to_main_grads), so the 4,015,130,624 bytes above go.
  auto c = make_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1");
  c.run.precision.beta_G = 2;
  c.run.options.precision_aware_optimizer = true;
  CHECK_BYTES(test::estimate(c).stages[0].step_transient, 0.0);
  // validate reads it from a case's features.other. The two cases' model is eight Llama-3.1-8B
  // layers (8 · 218,112,000 + 2 · 525,336,576 + the final norm's 4,096 parameters =
  // 2,795,573,248) on dp 8: a shard of 349,446,656 elements, 1,397,786,624 bytes of fp32 copy
  // where the optimizer is not precision-aware.
  const auto cases = load_validation_cases(test::data_path("validation/precision-aware-optimizer.yaml"));
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].run.options.precision_aware_optimizer);
  CHECK_FALSE(cases[1].run.options.precision_aware_optimizer);
  const auto step = [](const ValidationCase& v) {
    return reference_memory(v.model, v.run, v.cluster, v.strategy).stages[0].step_transient;
  };
  CHECK_BYTES(step(cases[0]), 0.0);
  CHECK_BYTES(step(cases[1]), 1'397'786'624.0);
}

TEST_CASE("validate: a pipeline split that counts the embedding and the loss gives each a slot") {
  // Eight layers in 2 x 5 virtual stages need the embedding's and the loss's slots (rule H12):
  // rank 0 holds the embedding's virtual stage and four one-layer ones, rank 1 four and the loss's.
  const auto cases = load_validation_cases(test::data_path("validation/pipeline-split.yaml"));
  REQUIRE(cases.size() == 1);
  const ValidationCase& v = cases[0];
  CHECK(v.run.options.account_embedding);
  CHECK(v.run.options.account_loss);
  const MemoryReport r = reference_memory(v.model, v.run, v.cluster, v.strategy);
  REQUIRE(r.stages.size() == 2);
  CHECK(r.stages[0].layers == 4);
  CHECK(r.stages[1].layers == 4);
}

TEST_CASE("torchtitan per-op SAC on an MoE layer keeps the topk and the all-to-all outputs, not the experts'") {
  // Qwen3-30B-A3B (h 2048, 32 heads, 4 KV heads of 128, top-8 of 128 experts, no shared expert),
  // tp 1: block input 2·2048 = 4,096; wq 2·4096, wv 2·512, attention output 2·4096 and its fp32
  // log-sum-exp 4·32 = 17,536; topk 12·8 = 96: 21,728 bytes per token. The grouped expert GEMMs
  // and the forced-recompute gate keep nothing.
  auto c = make_case("qwen3-30b-a3b", 8, 4096, 8, "dp=8,zero=3,recompute=selective", "torchtitan");
  c.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::moe);
  CHECK(per_token(census, c.run, c.strategy, 0).kept_sel == 21'728);
  // ep 8: the dispatch (k·ρ = 8 rows received, ρ = 1) and combine (8 rows) outputs, 2·2048·8·2 = 65,536.
  auto e = make_case("qwen3-30b-a3b", 8, 4096, 8, "dp=8,ep=8,zero=3,recompute=selective", "torchtitan");
  e.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const Census ep = analytic_census(e.model, e.run, e.strategy, FfnKind::moe);
  CHECK(per_token(ep, e.run, e.strategy, 0).kept_sel == 21'728 + 65'536);
}

TEST_CASE("torchtitan per-op SAC on MLA counts its five matmuls; the FlexAttention split keeps the norms") {
  // DeepSeek-V3 (h 7168, 128 heads, q latent 1536, KV latent 512 + rope 64, d_v 128, top-8, one
  // shared expert of 2048), tp 1, ep 8, eager. The matmuls wq_a, wq_b, wkv_a, wkv_b, wo: the odd
  // ones saved, 2·(1536 + 576 + 7168) = 18,560; block input 2·7168 = 14,336; attention output
  // 2·128·128 = 32,768 and log-sum-exp 4·128 = 512; topk 12·8 = 96; dispatch and combine outputs
  // 2·7168·8·2 = 229,376; the shared expert's count goes on at 6: w1 no, w3 (7) saved 2·2048,
  // w2 no. 14,336 + 18,560 + 32,768 + 512 + 96 + 229,376 + 4,096 = 299,744 bytes per token.
  auto c = make_case("deepseek-v3", 8, 4096, 8, "dp=8,ep=8,zero=3,recompute=selective", "torchtitan");
  c.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  CHECK(per_token(analytic_census(c.model, c.run, c.strategy, FfnKind::moe), c.run, c.strategy, 0).kept_sel == 299'744);
  // FlexAttention with the model not compiled (torchtitan #1683..#2118): the attention under full
  // AC keeps its input 2·7168, the two norms their inputs and fp32 rstd 2·(2·7168 + 4), the MoE
  // its input 2·7168; in the MoE's own count the shared w1 (1) and w2 (3) are saved,
  // 2·2048 + 2·7168: 57,352 + 96 + 229,376 + 4,096 + 14,336 = 305,256.
  const LayerTime block = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  c.run.options.sac_attention_full_ac = true;
  CHECK(per_token(analytic_census(c.model, c.run, c.strategy, FfnKind::moe), c.run, c.strategy, 0).kept_sel == 305'256);
  // The backward reruns the whole attention: its other half of the projections and its core.
  const LayerTime split = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  const int sel = static_cast<int>(Recompute::selective);
  CHECK(split.recompute[sel] > block.recompute[sel] + block.core_forward);
}

TEST_CASE(
    "torchtitan's op SAC with SP reruns the all-gathers; the FlexAttention split the attention's reduce-scatter") {
  // Llama-3.1-8B, tp 2 with SP inside one H100 node, b 1, s 8192: each collective moves
  // S = 8192·4096·2 = 67,108,864 B, α_intra 2 µs + 1/2·S/(0.7·450e9) = 108.522 µs.
  auto c = make_case("llama-3.1-8b", 8, 8192, 8, "tp=2,sp=true,zero=3,recompute=selective", "torchtitan");
  c.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;
  const double one = 2e-6 + 0.5 * 67'108'864.0 / 315e9;
  const int sel = static_cast<int>(Recompute::selective);
  // Op SAC saves the reduce-scatters' outputs: the two all-gathers run again.
  const LayerTime sac = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK(sac.tp_forward == doctest::Approx(4 * one).epsilon(1e-9));
  CHECK(sac.tp_recompute[sel] == doctest::Approx(2 * one).epsilon(1e-9));
  // Under the split the attention reruns whole, its reduce-scatter too: 3 × 108.522 µs.
  c.run.options.sac_attention_full_ac = true;
  const LayerTime split = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK(split.tp_recompute[sel] == doctest::Approx(3 * one).epsilon(1e-9));
}

TEST_CASE("validate: a case saying the attention ran under full AC takes torchtitan's FlexAttention split") {
  const auto cases = load_validation_cases(test::data_path("validation/flex-attention-split.yaml"));
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].run.options.sac_attention_full_ac);
  CHECK_FALSE(cases[1].run.options.sac_attention_full_ac);  // negated
  CHECK_FALSE(cases[2].run.options.sac_attention_full_ac);  // unstated: the whole block under SAC
}

TEST_CASE("validate: a HybridEP case's static token budget and EP overlap, from its `other`") {
  const auto cases = load_validation_cases(test::data_path("validation/hybridep-clauses.yaml"));
  REQUIRE(cases.size() == 3);
  for (const auto& c : cases) CHECK(c.run.options.ep_dispatch == EpDispatch::hybridep);
  CHECK(cases[0].run.options.ep_token_budget);
  CHECK_FALSE(cases[1].run.options.ep_token_budget);  // negated
  CHECK_FALSE(cases[2].run.options.ep_token_budget);  // unstated: the dynamic dispatch
  // "EP communication overlap" without a comm_overlap list; "no ..." and "... off" are not.
  CHECK(cases[0].run.options.ep_overlap == 1);
  CHECK(cases[1].run.options.ep_overlap == 0);
  CHECK(cases[2].run.options.ep_overlap == 0);
  // "router fusion" and the graph scopes "attn" and "moe_router"; "... off" is not.
  CHECK(cases[0].run.options.moe_router_fusion);
  CHECK(cases[0].run.options.cuda_graph_attn);
  CHECK(cases[0].run.options.cuda_graph_moe_router);
  CHECK_FALSE(cases[1].run.options.moe_router_fusion);
  CHECK_FALSE(cases[1].run.options.cuda_graph_attn);
  CHECK_FALSE(cases[1].run.options.cuda_graph_moe_router);
  CHECK_FALSE(cases[2].run.options.moe_router_fusion);
  CHECK_FALSE(cases[2].run.options.cuda_graph_attn);
  CHECK(cases[2].run.options.cuda_graph_moe_router);
  // "RoPE fusion" (Megatron's fused MLA rotary); "... off" and unstated are not.
  CHECK(cases[0].run.options.rope_fusion);
  CHECK_FALSE(cases[1].run.options.rope_fusion);
  CHECK_FALSE(cases[2].run.options.rope_fusion);
  // Transformer Engine's "fused grouped MLP"; "... off" and unstated are not.
  CHECK(cases[0].run.options.te_fused_grouped_mlp);
  CHECK_FALSE(cases[1].run.options.te_fused_grouped_mlp);
  CHECK_FALSE(cases[2].run.options.te_fused_grouped_mlp);
  // "FP8 attention (fp8_dot_product_attention True)"; "FP8 attention off" and unstated are not.
  CHECK(cases[0].run.options.fp8_attention);
  CHECK_FALSE(cases[1].run.options.fp8_attention);
  CHECK_FALSE(cases[2].run.options.fp8_attention);
}

TEST_CASE("validate: a Megatron case with layers its stages do not divide takes Megatron-Bridge's split") {
  std::vector<UnestimatedCase> refused;
  const auto cases = load_validation_cases(test::data_path("validation/uneven-pipeline-split.yaml"), &refused);
  REQUIRE(cases.size() == 7);
  // 30 layers + embedding + loss = 32 slots over 4 stages: the accounting flags.
  CHECK(cases[0].run.options.account_embedding);
  CHECK(cases[0].run.options.account_loss);
  CHECK(cases[0].run.options.layers_per_vstage.empty());
  // 29 layers: 31 slots do not divide 4 either; ⌈29/4⌉ = 8 from the first, 29 − 24 = 5 last.
  CHECK_FALSE(cases[1].run.options.account_embedding);
  CHECK(cases[1].run.options.layers_per_vstage == std::vector<std::int64_t>{8, 8, 8, 5});
  // Even, torchtitan (its own split counts both, its profile), or stated: as they are.
  CHECK_FALSE(cases[2].run.options.account_embedding);
  CHECK(cases[2].run.options.layers_per_vstage.empty());
  CHECK(cases[3].run.options.layers_per_vstage.empty());
  CHECK(cases[4].run.options.account_embedding);
  CHECK_FALSE(cases[4].run.options.account_loss);
  CHECK(cases[4].run.options.layers_per_vstage.empty());
  // A Megatron layout string in `other` is the split itself: 'E|t*10|t*10|t*10L' is 0, 10, 10, 10.
  CHECK(cases[5].run.options.layers_per_vstage == std::vector<std::int64_t>{0, 10, 10, 10});
  CHECK_FALSE(cases[5].run.options.account_embedding);
  // 13 layers with an MTP depth on 8 virtual stages: 2 each from the first would leave the last
  // none, so the embedding, the MTP depth and the loss take a slot each: 16 slots, 2 per stage.
  CHECK(cases[6].run.options.layers_per_vstage == std::vector<std::int64_t>{1, 2, 2, 2, 2, 2, 2, 0});
  // One that does not cover the strategy's stages and the model's layers is refused, saying so.
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].reason.find("field 'features.other': pipeline layout 'Et*9|t*10|t*10L' has 3 virtual stages, "
                               "29 decoder layers and 0 MTP depths; expected pp*vpp = 4, the model's 30 and 0") !=
        std::string::npos);
}

TEST_CASE("eager torchtitan keeps SwiGLU unfused and the MoE combine's fp32 copy; compiled, neither") {
  // No recompute, Qwen3-30B-A3B, tp 1: eager adds the silu output per routed slot (2·768 each,
  // k = 8: 12,288) and the fp32 copy of each routed output (4·2048·8 = 65,536) = 77,824 bytes per
  // token over the fused, compiled layer.
  auto eager = make_case("qwen3-30b-a3b", 8, 4096, 8, "dp=8,zero=3", "torchtitan");
  auto compiled = eager;
  compiled.run.options.torch_compile = true;
  const double a = analytic_census(eager.model, eager.run, eager.strategy, FfnKind::moe).saved_total() +
                   analytic_census(eager.model, eager.run, eager.strategy, FfnKind::moe).saved_tp_total();
  const double b = analytic_census(compiled.model, compiled.run, compiled.strategy, FfnKind::moe).saved_total() +
                   analytic_census(compiled.model, compiled.run, compiled.strategy, FfnKind::moe).saved_tp_total();
  CHECK(a - b == 77'824);
}

TEST_CASE("eager gpt-oss keeps four clamped-SwiGLU tensors per routed row where SwiGLU keeps one") {
  // gpt-oss-120b (expert width 2,880, top-4), eager torchtitan, no recompute, tp 1: the clamped gate,
  // its sigmoid, their product and the clamped linear half are saved per routed row, three f_e-wide
  // bf16 tensors more than the plain SwiGLU's silu output: 3 · 2 · 2,880 · 4 = 69,120 bytes per
  // token. Compiled (one fused kernel) the census is the plain model's either way.
  auto clamped = make_case(test::data_path("models/gpt-oss-120b.json"), 8, 4096, 8, "dp=8,zero=3", "torchtitan");
  REQUIRE(clamped.model.clamped_swiglu);
  auto plain = clamped;
  plain.model.clamped_swiglu = false;
  const auto kept = [](const test::Case& c) {
    const Census census = analytic_census(c.model, c.run, c.strategy, FfnKind::moe);
    return census.saved_total() + census.saved_tp_total();
  };
  CHECK(kept(clamped) - kept(plain) == 69'120);
  clamped.run.options.torch_compile = plain.run.options.torch_compile = true;
  CHECK(kept(clamped) == kept(plain));
}

TEST_CASE("torchtitan's selective recompute is its per-op SAC unless the run says otherwise") {
  // torchtitan.yaml: recompute_switches torchtitan_op, what `export --to torchtitan` writes.
  const auto t = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3,recompute=selective", "torchtitan");
  CHECK(t.run.options.selective_policy == SelectivePolicy::torchtitan_op_sac);
  const auto m = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=1,recompute=selective", "megatron");
  CHECK(m.run.options.selective_policy == SelectivePolicy::switches);
  CHECK(m.run.options.switches == RecomputeSwitches::megatron_core_attn());
}

TEST_CASE("per-op SAC repeats SP's all-gathers in the backward; full recompute every collective") {
  // torchtitan's SAC saves reduce-scatter outputs, not all-gather outputs, and each matmul's
  // weight gradient needs its all-gathered input: with SP the two all-gathers of a layer (half
  // of its forward collectives, an all-gather and a reduce-scatter of S = b·s·h·β_a taking the
  // same time) run again. Megatron's core-attention recompute saves its layer input: nothing.
  const auto t = make_case("llama-3.1-70b", 64, 8192, 64, "dp=8,tp=8,sp=true,zero=3,recompute=selective", "torchtitan");
  const LayerTime lt = layer_time(t.model, t.run, t.cluster.device, t.strategy, FfnKind::dense);
  REQUIRE(lt.tp_forward > 0);
  CHECK(lt.tp_recompute[static_cast<int>(Recompute::selective)] == lt.tp_forward / 2);
  CHECK(lt.tp_recompute[static_cast<int>(Recompute::full)] == lt.tp_forward);
  CHECK(lt.tp_recompute[static_cast<int>(Recompute::none)] == 0);
  const auto m = make_case("llama-3.1-70b", 64, 8192, 64, "dp=8,tp=8,sp=true,zero=1,recompute=selective", "megatron");
  CHECK(layer_time(m.model, m.run, m.cluster.device, m.strategy, FfnKind::dense)
            .tp_recompute[static_cast<int>(Recompute::selective)] == 0);
  // The stage adds it per layer and micro-batch: 80 layers × m = 8 beyond recompute = none.
  auto none = t;
  none.strategy.recompute = Recompute::none;
  const TimeReport a = reference_step_time(t.model, t.run, t.cluster, t.strategy);
  const TimeReport b = reference_step_time(none.model, none.run, none.cluster, none.strategy);
  CHECK(a.comm_tp - b.comm_tp == doctest::Approx(80 * 8 * lt.tp_forward / 2));
  // The search's evaluator adds n equal layers as n·x, the reference x n times (1e-12 apart).
  const TimeReport fast = estimate_step_time(t.model, t.run, t.cluster, t.strategy);
  CHECK(fast.comm_tp == doctest::Approx(a.comm_tp).epsilon(1e-12));
  CHECK(fast.step == doctest::Approx(a.step).epsilon(1e-12));
}

TEST_CASE("Megatron with Transformer Engine keeps FP8 copies of the GEMM weights for the step") {
  // Llama-3.1-70B, tp 4, pp 4: a middle stage's 20 layers each hold (qkv 8192·(8192 + 2·1024) +
  // o 8192² + MLP 3·8192·28672)/4 = 855,638,016/4 = 213,909,504 GEMM weights per rank. On H100 TE
  // keeps each as FP8 data and its FP8 transpose: 2 bytes, 8,556,380,160 in all.
  auto fp8 = [](const char* device, Fp8Scaling scaling, bool param_gather) {
    auto c = make_case("llama-3.1-70b", 64, 4096, 64, "tp=4,sp=true,pp=4,zero=1,mbs=1", "megatron", device);
    c.run.options.fp8_linears = true;
    c.run.options.fp8_scaling = scaling;
    c.run.options.fp8_param_gather = param_gather;
    resolve_device_facts(c.run, c.cluster.device);
    return test::estimate(c).stages[1];
  };
  const double gemm = 20.0 * 213'909'504;
  CHECK_BYTES(fp8("h100-80gb", Fp8Scaling::tensorwise, false).fp8_cache, 2 * gemm);
  // Blackwell runs FP8 GEMMs in any layout: no transpose, 1 byte.
  CHECK_BYTES(fp8("b200-192gb", Fp8Scaling::tensorwise, false).fp8_cache, gemm);
  // MXFP8 quantises rows and columns apart, one E8M0 scale per 32: 2·(1 + 1/32) everywhere.
  CHECK_BYTES(fp8("b200-192gb", Fp8Scaling::mxfp8, false).fp8_cache, 2.0625 * gemm);
  CHECK_BYTES(fp8("h100-80gb", Fp8Scaling::mxfp8, false).fp8_cache, 2.0625 * gemm);
  // --fp8-param-gather: the copies are the weights, the bf16 ones gone. On H100, 2 bytes either
  // way; on B200 tensorwise the GEMM weights drop from 2 bytes to 1.
  const StageMemory h = fp8("h100-80gb", Fp8Scaling::tensorwise, true);
  const StageMemory bf16 = fp8("h100-80gb", Fp8Scaling::tensorwise, false);
  CHECK(h.fp8_cache == 0);
  CHECK_BYTES(h.weights, bf16.weights);
  CHECK_BYTES(fp8("b200-192gb", Fp8Scaling::tensorwise, true).weights, bf16.weights - gemm);
  // Without FP8 linears, or under torchtitan (torchao casts per use), no copies.
  auto plain = make_case("llama-3.1-70b", 64, 4096, 64, "tp=4,sp=true,pp=4,zero=1,mbs=1");
  CHECK(test::estimate(plain).stages[1].fp8_cache == 0);
  auto tt = make_case("llama-3.1-70b", 64, 4096, 64, "tp=4,sp=true,pp=4,zero=1,mbs=1", "torchtitan");
  tt.run.options.fp8_linears = true;
  resolve_device_facts(tt.run, tt.cluster.device);
  CHECK(test::estimate(tt).stages[1].fp8_cache == 0);
}

TEST_CASE("validate: FP8 weights where a case says so or Megatron-Bridge runs it; TE's copies otherwise") {
  // Eight Llama-3.1-8B layers on dp 8 hold 8 · (4096 · (4096 + 2 · 1024) + 4096² + 3 · 4096 · 14336)
  // = 1,744,830,464 GEMM weights; on H100 TE's copies take 2 bytes each beside the bf16 weights.
  const auto cases = load_validation_cases(test::data_path("validation/fp8-weight-copies.yaml"));
  REQUIRE(cases.size() == 3);
  CHECK_FALSE(cases[0].run.options.fp8_param_gather);
  CHECK(cases[1].run.options.fp8_param_gather);
  CHECK(cases[2].run.options.fp8_param_gather);
  const auto stage = [](const ValidationCase& v) {
    return reference_memory(v.model, v.run, v.cluster, v.strategy).stages[0];
  };
  CHECK_BYTES(stage(cases[0]).fp8_cache, 2.0 * 1'744'830'464);
  CHECK_BYTES(stage(cases[1]).fp8_cache, 0.0);
  CHECK_BYTES(stage(cases[1]).weights, stage(cases[0]).weights);  // 1 byte of data + 1 of transpose
  CHECK(cases[1].run.precision.beta_gather == 1);
}

TEST_CASE("validate: under torchtitan's FSDP the fp32 shard is the master and the bf16 weights only gathered") {
  // tt2412-t2-a: Llama-3.1-8B (8,030,261,248 parameters) over FSDP 8, param_bytes 2 and
  // master_weight_bytes 4 as the case states them: the persistent shard holds 4 bytes a parameter
  // (8,030,261,248 · 4 / 8 = 4,015,130,624), the 2-byte weights exist only gathered, and the
  // optimizer shard keeps the two fp32 moments alone (8 bytes: 8,030,261,248 · 8 / 8).
  const auto cases = load_validation_cases(test::data_path("validation/two-cases.yaml"));
  REQUIRE(cases.size() == 2);
  const ValidationCase& v = cases[0];
  CHECK(v.run.precision.beta_P == 4);
  CHECK(v.run.precision.beta_master == 0);
  CHECK(v.run.precision.beta_gather == 2);
  const auto st = reference_memory(v.model, v.run, v.cluster, v.strategy).stages[0];
  CHECK_BYTES(st.weights, 4'015'130'624.0);
  CHECK_BYTES(st.optimizer, 8'030'261'248.0);
  // Megatron's bf16 weights and fp32 master are both persistent: its case keeps its bytes.
  CHECK(cases[1].run.precision.beta_P == 2);
  CHECK(cases[1].run.precision.beta_master == 4);
}

TEST_CASE("all-gather CP gathers every rank's K/V chunk; repeated K/V heads are a wide") {
  // Llama-3.1-8B (32 heads, 8 K/V heads of 128) at s = 262144 over cp 8 on one node, b = 1:
  // a chunk is (262144/8) · 1 · (8 · 128) · 4 = 134,217,728 bytes and the all-gather holds the
  // other 7 ranks' (PyTorch's _AllGatherRotater gathers them in one call): 939,524,096.
  auto c = make_case("llama-3.1-8b", 8, 262144, 1, "cp=8,cp_algo=allgather,dp=1,mbs=1", "torchtitan");
  CHECK_BYTES(cp_buffer_transient(c.model, c.run, c.strategy, 8), 939'524'096.0);
  CHECK_BYTES(gathered_kv_bytes(c.model, c.run, c.strategy), 7.0 * 2 * 2 * 1024);  // (cp−1)·β_a·(K+V)/tp
  const double att_bmm =
      analytic_census(c.model, c.run, c.strategy, FfnKind::dense).saved_tp[static_cast<int>(Op::attBMM)];
  CHECK_BYTES(att_bmm, 2.0 * (4096 + 2 * 1024));  // flash keeps q, k, v: β_a·(a + 2·n_kv)·d_h
  const LayerTime t = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);

  // repeat_kv_heads (torchtitan's repeat_kv before SDPA): K and V are 32 heads wide, four times
  // as many bytes: chunks of 32768 · 4096 · 4 = 536,870,912, seven held: 3,758,096,384.
  test::Case r = c;
  r.run.options.repeat_kv_heads = true;
  CHECK_BYTES(cp_buffer_transient(r.model, r.run, r.strategy, 8), 3'758'096'384.0);
  CHECK_BYTES(gathered_kv_bytes(r.model, r.run, r.strategy), 7.0 * 2 * 2 * 4096);
  CHECK_BYTES(analytic_census(r.model, r.run, r.strategy, FfnKind::dense).saved_tp[static_cast<int>(Op::attBMM)],
              2.0 * (4096 + 2 * 4096));
  // The all-gather's bandwidth term grows fourfold; its 7 latency steps (α_intra each) do not.
  const LayerTime tr = layer_time(r.model, r.run, r.cluster.device, r.strategy, FfnKind::dense);
  const double latency = 7 * c.cluster.device.alpha_intra;
  CHECK(tr.cp_forward - latency == doctest::Approx(4 * (t.cp_forward - latency)).epsilon(1e-9));

  // validate reads it from the case's features.other.
  const auto cases = load_validation_cases(test::data_path("validation/two-cases.yaml"));
  CHECK(cases[0].run.options.repeat_kv_heads);
  CHECK_FALSE(cases[1].run.options.repeat_kv_heads);
}
