// Properties of the step-time model (issue 4): each a comparison the formulas must respect.
#include <doctest/doctest.h>

#include <tbb/parallel_for.h>

#include "estimator_fixture.hpp"
#include "estimators/collectives.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/reference_step_time.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {
TimeReport timing(const test::Case& c) { return estimate_step_time(c.model, c.run, c.cluster, c.strategy); }
}  // namespace

TEST_CASE("full recompute costs more compute than selective, selective more than none") {
  double prev = -1;
  for (const char* mode : {"none", "selective", "full"}) {
    CAPTURE(mode);
    const auto r =
        timing(make_case("llama-3.1-70b", 64, 8192, 128, std::string("tp=8,sp=true,pp=4,recompute=") + mode));
    const double compute = r.forward + r.backward + r.recompute;
    CHECK(compute > prev);
    prev = compute;
  }
}

TEST_CASE("interleaving shrinks the bubble") {
  const auto plain = timing(make_case("llama-3.1-70b", 64, 8192, 128, "tp=8,sp=true,pp=4,vpp=1,mbs=1"));
  const auto inter = timing(make_case("llama-3.1-70b", 64, 8192, 128, "tp=8,sp=true,pp=4,vpp=5,mbs=1"));
  CHECK(inter.bubble < plain.bubble);
  // Equal stages: the 1F1B bubble is (pp − 1)/v of a stage time.
  CHECK(inter.bubble < plain.bubble / 4);
}

TEST_CASE("a TP group that spans nodes is slower than one inside a node") {
  // tp 8 on nodes of 8 (inside) against the same strategy on a device with 4 per node (spanning).
  auto inside = make_case("llama-3.1-70b", 64, 8192, 128, "tp=8,sp=true,pp=4");
  auto spanning = inside;
  spanning.cluster.device.devices_per_node = 4;
  const auto a = timing(inside), b = timing(spanning);
  CHECK(b.comm_tp > a.comm_tp);
  CHECK(b.step > a.step);
}

TEST_CASE("the time terms sum to the step time") {
  for (const char* s :
       {"tp=8,sp=true,pp=4,vpp=5,zero=1", "tp=4,sp=true,cp=2,pp=2,zero=3", "dp=64,zero=0,recompute=full"}) {
    CAPTURE(s);
    const auto r = timing(make_case("llama-3.1-70b", 64, 8192, 128, s));
    const double sum = r.forward + r.backward + r.recompute + r.comm_tp + r.comm_cp + r.comm_ep + r.comm_pp +
                       r.comm_zero + r.bubble + r.comm_dp + r.optimizer;
    CHECK(std::fabs(sum - r.step) <= 1e-9 * r.step);
  }
}

TEST_CASE("the step time is the same from every thread") {
  const auto c = make_case("deepseek-v3", 1024, 4096, 2048, "tp=2,sp=true,pp=16,ep=64,zero=1,recompute=full");
  const double ref = timing(c).step;
  std::vector<double> steps(64);
  tbb::parallel_for(std::size_t{0}, steps.size(), [&](std::size_t k) { steps[k] = timing(c).step; });
  for (double t : steps) CHECK(t == ref);
}

TEST_CASE("the elementwise term prices norms, residuals, rotary and SwiGLU as HBM traffic") {
  // Llama-3.1-8B, tp 1, per token: norms 2·2h and residuals 2·3h at 2 bytes (81,920), rotary on
  // (32 + 8)·128 q/k elements read and written (20,480), SwiGLU reading 2f and writing f (86,016):
  // 188,416 bytes, once forward and twice backward, at η_hbm·B_hbm.
  auto c = make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3,mbs=1");
  c.run.profile.elementwise = false;
  const LayerTime off = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  c.run.profile.elementwise = true;
  c.run.profile.eager_elementwise_passes = 1;
  const LayerTime on = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  const double expected = 188'416.0 * 8192 / (0.8 * 3350e9);
  CHECK(std::fabs((on.forward - off.forward) - expected) <= 1e-12);
  CHECK(std::fabs((on.backward - off.backward) - 2 * expected) <= 1e-12);
}

TEST_CASE("the loss's HBM traffic: bytes per logit of the rank's vocabulary shard, in both step-time paths") {
  // Llama-3.1-8B at tp 2 on H100-80GB: V_pad = 128,256 (a multiple of 128·2), 64,128 entries per
  // rank; 8,192 tokens per micro-batch: 525,336,576 logits. Megatron's cross-entropy (profile:
  // 38 B forward, 14 B backward) at η_hbm·B_hbm = 0.8·3350e9 = 2.68e12 B/s:
  // 19,962,789,888 B -> 7.448802 ms forward, 7,354,712,064 B -> 2.744296 ms backward.
  auto c = make_case("llama-3.1-8b", 8, 8192, 8, "dp=4,tp=2,sp=true,zero=1,mbs=1");
  CHECK(c.run.profile.loss_bytes_forward == 38);
  CHECK(c.run.profile.loss_bytes_backward == 14);
  // Megatron's vocabulary-parallel loss runs the same kernels at any TP: one pair of figures.
  CHECK(c.run.profile.loss_parallel_bytes_forward == 38);
  CHECK(c.run.profile.loss_parallel_bytes_backward == 14);
  const LossTime l = loss_time(c.run, c.cluster.device, c.strategy, 128256);
  CHECK(l.forward == doctest::Approx(7.448802197e-3).epsilon(1e-9));
  CHECK(l.backward == doctest::Approx(2.744295546e-3).epsilon(1e-9));
  const TimeReport with = timing(c);
  const TimeReport ref_with = reference_step_time(c.model, c.run, c.cluster, c.strategy);
  c.run.profile.loss_bytes_forward = c.run.profile.loss_bytes_backward = 0;
  c.run.profile.loss_parallel_bytes_forward = c.run.profile.loss_parallel_bytes_backward = 0;
  const TimeReport without = timing(c);
  const TimeReport ref_without = reference_step_time(c.model, c.run, c.cluster, c.strategy);
  // One micro-batch per step (m = 1) on the one stage: the head adds exactly the loss's time.
  CHECK(with.stages[0].forward - without.stages[0].forward == doctest::Approx(l.forward).epsilon(1e-9));
  CHECK(with.stages[0].backward - without.stages[0].backward == doctest::Approx(l.backward).epsilon(1e-9));
  CHECK(ref_with.stages[0].forward - ref_without.stages[0].forward == doctest::Approx(l.forward).epsilon(1e-9));
  CHECK(ref_with.stages[0].backward - ref_without.stages[0].backward == doctest::Approx(l.backward).epsilon(1e-9));
}

TEST_CASE("without flash attention the scores run over the whole square and pass through HBM") {
  // Llama-3.1-8B at tp 2, s 4096, b 1: the rank's (32/2)·4096·4096 = 268,435,456 score elements.
  // Megatron's profile: 13 B forward, 19 B backward per element at 2.68e12 B/s:
  // 3,489,660,928 B -> 1.302112 ms and 5,100,273,664 B -> 1.903087 ms.
  auto c = make_case("llama-3.1-8b", 8, 4096, 8, "dp=4,tp=2,sp=true,zero=1,mbs=1,recompute=full");
  const Device& d = c.cluster.device;
  const LayerTime flash = layer_time(c.model, c.run, d, c.strategy, FfnKind::dense);
  c.run.flash_attention = false;
  const LayerTime unfused = layer_time(c.model, c.run, d, c.strategy, FfnKind::dense);
  c.run.profile.unfused_score_bytes_forward = c.run.profile.unfused_score_bytes_backward = 0;
  const LayerTime square = layer_time(c.model, c.run, d, c.strategy, FfnKind::dense);
  // The full square: twice the causal core's FLOPs, at the same η (megatron: η_fw = η_core = 1),
  // so the kernel's FLOP part doubles and its fixed cost τ_kern/η_max stays.
  const double tau = d.kernel_overhead / d.eta_max;
  CHECK(square.core_forward - tau == doctest::Approx(2 * (flash.core_forward - tau)).epsilon(1e-12));
  CHECK(unfused.core_forward - square.core_forward == doctest::Approx(1.302112287e-3).epsilon(1e-9));
  CHECK(unfused.forward - square.forward == doctest::Approx(1.302112287e-3).epsilon(1e-9));
  CHECK(unfused.backward - square.backward == doctest::Approx(1.903087188e-3).epsilon(1e-9));
  // Full recompute repeats the forward, score traffic included.
  CHECK(unfused.recompute[static_cast<int>(Recompute::full)] == unfused.forward);
}

TEST_CASE("torch.compile and FP8 linears only ever shorten the step under the torchtitan profile") {
  auto c = make_case("llama-3.1-70b", 256, 8192, 512, "tp=8,sp=true,zero=3,recompute=full,mbs=16", "torchtitan");
  const double eager = timing(c).step;
  c.run.options.torch_compile = true;
  const double compiled = timing(c).step;
  c.run.options.fp8_linears = true;
  const double fp8 = timing(c).step;
  CHECK(compiled < eager);
  CHECK(fp8 < compiled);
}

TEST_CASE("overlap switches of §7.6 expose what they say") {
  auto base = make_case("mixtral-8x7b", 64, 4096, 256, "tp=2,sp=true,pp=4,cp=2,cp_algo=ring,ep=8,zero=1");
  base.run.profile.host_launch_time = 0;  // the collectives alone (the host's issue: moe_host_issue_test)
  base.run.profile.ep_overlap_share = 1;  // the schedule's pairing alone (the share: below)
  const TimeReport r0 = timing(base);
  REQUIRE(r0.comm_tp > 0);
  REQUIRE(r0.comm_ep > 0);
  REQUIRE(r0.comm_pp > 0);
  {  // ω_tp = 0.25 and ω_ep = 1: three quarters of TP; of EP (its compute outlasts it) only what
     // the micro-batches without a partner expose: 1F1B over pp = 4 stages of 8 equal layers, the
     // first stage's warm-up of pp − 1 forwards plus the overlap's one, and as many backwards:
     // 4 micro-batches' worth of its EP time.
    auto c = base;
    c.run.options.tp_overlap = 0.25;
    c.run.options.ep_overlap = 1;
    const TimeReport r = timing(c);
    CHECK(r.comm_tp == doctest::Approx(0.75 * r0.comm_tp).epsilon(1e-12));
    CHECK(r.comm_ep == doctest::Approx(4 * r0.stages[0].comm_ep).epsilon(1e-12));
  }
  {  // EP overlap hides no more than the layer's compute: 2·C of all-to-alls (both directions)
     // beside F + B of compute leave 2·C − min(ω_ep·2·C, F + B) exposed, here 2·C − (F + B).
    auto c = make_case("qwen3-30b-a3b", 64, 4096, 256, "dp=64,ep=64,zero=1,mbs=1");
    c.run.profile.ep_overlap_share = 1;
    const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
    c.run.options.ep_overlap = 1;
    const LayerTime hidden = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
    REQUIRE(plain.ep > plain.forward + plain.backward);  // 64 ranks over 8 nodes: the NICs bound
    CHECK(hidden.ep == doctest::Approx(plain.ep - (plain.forward + plain.backward)));
    // Each direction keeps its share: the forward's all-to-alls and its split exchange.
    CHECK(hidden.ep_forward == doctest::Approx(hidden.ep * plain.ep_forward / plain.ep));
  }
  {  // The overlap hides the Megatron profile's 36.55 % of the EP traffic (within one node of 8 it
     // all fits beside the compute), HybridEP's and the all-to-all dispatcher's alike: 0.6345 of it
     // stays exposed.
    for (const EpDispatch dispatch : {EpDispatch::hybridep, EpDispatch::all_to_all}) {
      auto c = make_case("qwen3-30b-a3b", 8, 4096, 256, "dp=8,ep=8,zero=1,mbs=1");
      REQUIRE(c.run.profile.ep_overlap_share == 0.3655);
      c.run.options.ep_dispatch = dispatch;
      const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
      c.run.options.ep_overlap = 1;
      const LayerTime hidden = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
      REQUIRE(0.3655 * plain.ep < plain.forward + plain.backward);
      CHECK(hidden.ep == doctest::Approx((1 - 0.3655) * plain.ep));
    }
  }
  {  // Megatron's overlap_p2p_comm: no PP hop exposed.
    auto c = base;
    c.run.options.pp_overlap = true;
    CHECK(timing(c).comm_pp == 0);
  }
  {  // cp_overlap off: the ring hops no longer hide behind the attention core.
    auto c = base;
    c.run.options.cp_overlap = false;
    CHECK(timing(c).comm_cp > r0.comm_cp);
  }
  {  // dp_overlap off: the whole reduction is exposed, more than with its backward window.
    auto c = make_case("llama-3.1-8b", 64, 8192, 64, "dp=64,zero=0,mbs=1");
    const double hidden = timing(c).comm_dp;
    c.run.options.dp_overlap = false;
    CHECK(timing(c).comm_dp > hidden);
  }
  {  // dualpipe_overlap off: DualPipeV's EP and PP traffic is priced like any schedule's.
    auto c = make_case("mixtral-8x7b", 64, 4096, 256, "tp=2,sp=true,pp=4,vpp=2,pp_schedule=dualpipev,ep=8,zero=1");
    const TimeReport paired = timing(c);
    CHECK(paired.comm_ep == 0);
    CHECK(paired.comm_pp == 0);
    c.run.options.dualpipe_overlap = false;
    const TimeReport exposed = timing(c);
    CHECK(exposed.comm_ep > 0);
    CHECK(exposed.comm_pp > 0);
  }
}

TEST_CASE("DeepEP-style dispatch sends a token once per other node holding its experts") {
  // Qwen3-30B-A3B on 16 H100-80GB (two nodes), ep 16, b 1, s 4096: n_moe = 4096 tokens,
  // S_d = 4096·8·2048·2 = 134,217,728 B. A node holds none of a token's 8 experts (64 of 128 on
  // each node) with probability Π_{j<8} (64 − j)/(128 − j) = 0.0030958642767920483, so
  // 4096·2048·2·(1 − 0.0030958...) = 16,725,276.0 B cross the NIC. One dispatch =
  // 15·5 µs + max(15/16·S_d/(0.7·450e9), 16,725,276/(0.66·0.9·50e9)) = 638.1406 µs (η_a2a_inter
  // 0.66, data/devices/h100-80gb.yaml); the layer has dispatch and combine, forward and backward:
  // 4 × that = 2.552562 ms. The per-expert all-to-all instead:
  // 15·5 µs + max(7/16·S_d/(0.7·450e9), 8/16·S_d/(0.66·0.9·50e9)), × 4 = 9.338231 ms, and its
  // forward split exchange (Megatron's all-gather of 128 int64 counts per rank over the 16 ranks,
  // 16,384 B: 15·5 µs + 15/16·16,384/315e9 = 75.048762 µs) = 9.413280 ms.
  // Communication alone: the host's issue time the dispatch's sync exposes is moe_host_issue_test's.
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  c.run.profile.host_launch_time = 0;
  const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(plain.ep == doctest::Approx(0.00941327960317460).epsilon(1e-9));
  c.run.options.ep_dispatch = EpDispatch::deepep;
  const LayerTime dedup = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(dedup.ep == doctest::Approx(0.0025525624242424237).epsilon(1e-9));
  // Inside one node there is nothing to deduplicate: the same all-to-alls, without the split
  // exchange (8·128·8 = 8,192 B over 8 ranks: 7·2 µs + 7/8·8,192/315e9 = 14.022756 µs).
  auto one = make_case("qwen3-30b-a3b", 8, 4096, 1024, "dp=8,ep=8,zero=1,mbs=1");
  one.run.profile.host_launch_time = 0;
  const double in_node = layer_time(one.model, one.run, one.cluster.device, one.strategy, FfnKind::moe).ep;
  one.run.options.ep_dispatch = EpDispatch::deepep;
  CHECK(in_node - layer_time(one.model, one.run, one.cluster.device, one.strategy, FfnKind::moe).ep ==
        doctest::Approx(14.022756e-6).epsilon(1e-6));
}

TEST_CASE("an all-to-all dispatch first exchanges its splits, once per forward") {
  // Megatron all-gathers E int64 counts per rank over the ETP×EP group; torchtitan all-to-alls
  // them over the EP group (layer_time.hpp, split_exchange_time).
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  const Device& d = c.cluster.device;
  // 16 ranks over two nodes: 15·5 µs + 15/16·(16·128·8 = 16,384 B)/315e9 = 75.048762 µs.
  CHECK(split_exchange_time(c.model, c.run, d, c.strategy) == doctest::Approx(75.048762e-6).epsilon(1e-6));
  // torchtitan: each rank sends its 1,024 B of counts, 7/16 of them inside the node and 8/16 out:
  // 15·5 µs + max(7/16·1,024/315e9, 8/16·1,024/(0.66·0.9·50e9)) = 75 µs + 0.017239 µs.
  c.run.profile.framework = Framework::torchtitan;
  CHECK(split_exchange_time(c.model, c.run, d, c.strategy) == doctest::Approx(75.017239e-6).epsilon(1e-6));
  // Fixed splits or kernels that count for themselves: nothing.
  c.run.profile.framework = Framework::deepspeed;
  CHECK(split_exchange_time(c.model, c.run, d, c.strategy) == 0);
  c.run.profile.framework = Framework::megatron;
  c.run.options.moe_mode = MoeMode::capacity;
  CHECK(split_exchange_time(c.model, c.run, d, c.strategy) == 0);
  c.run.options.moe_mode = MoeMode::dropless;
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  CHECK(split_exchange_time(c.model, c.run, d, c.strategy) == 0);
  // The backward reuses the splits: inside one node the all-to-all dispatcher's whole excess over
  // DeepEP's is its forward's.
  auto one = make_case("qwen3-30b-a3b", 8, 4096, 1024, "dp=8,ep=8,zero=1,mbs=1");
  one.run.profile.host_launch_time = 0;  // the communication alone
  const LayerTime a2a = layer_time(one.model, one.run, one.cluster.device, one.strategy, FfnKind::moe);
  one.run.options.ep_dispatch = EpDispatch::deepep;
  const LayerTime dedup = layer_time(one.model, one.run, one.cluster.device, one.strategy, FfnKind::moe);
  CHECK(a2a.ep_forward - dedup.ep_forward == doctest::Approx(a2a.ep - dedup.ep));
  CHECK(a2a.ep - dedup.ep == doctest::Approx(14.022756e-6).epsilon(1e-6));
}

TEST_CASE("HybridEP all-gathers the routing map before each forward dispatch") {
  // The case above, HybridEP: each rank's bool routing map is 4096 tokens × 128 experts =
  // 524,288 B, gathered over the 16-rank EP group (8,388,608 B in all). The group spans two
  // nodes: ring bandwidth min(0.7·450e9, 8·0.9·50e9) = 315e9 B/s, α_inter 5 µs, so
  // 15·5 µs + 15/16·8,388,608/315e9 = 75 µs + 24.966095 µs = 99.966095 µs, once per forward.
  // The host's issue time its sync exposes is moe_host_issue_test's; without it (a profile that
  // does not price it, as here), the all-gather alone.
  auto c = make_case("qwen3-30b-a3b", 16, 4096, 1024, "dp=16,ep=16,zero=1,mbs=1");
  const double profile_launch_time = c.run.profile.host_launch_time;
  c.run.profile.host_launch_time = 0;
  c.run.options.ep_dispatch = EpDispatch::deepep;
  const LayerTime deepep = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  c.run.options.ep_dispatch = EpDispatch::hybridep;
  const LayerTime hybridep = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(hybridep.ep - deepep.ep == doctest::Approx(99.966095e-6).epsilon(1e-6));
  CHECK(hybridep.ep_forward - deepep.ep_forward == doctest::Approx(99.966095e-6).epsilon(1e-6));
  // With the Megatron profile's launch time, a static token budget (moe_expert_rank_capacity_factor)
  // needs no host sync and exposes nothing more: the all-gather alone again.
  CHECK(profile_launch_time > 0);
  c.run.profile.host_launch_time = profile_launch_time;
  c.run.options.ep_token_budget = true;
  const LayerTime budget = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(budget.ep - deepep.ep == doctest::Approx(99.966095e-6).epsilon(1e-6));
}

TEST_CASE("latency_model tree counts ⌈log2 n⌉ latency steps (§7.4)") {
  // 64 ranks with stride 1 span 8 nodes: α_inter = 5 µs per step. An all-reduce's ring has
  // 2·63 steps, the tree 2·6; a reduce-scatter 63 and 6. 5 ranks do not tile a node of 8, so
  // their group crosses nodes (α 5 µs): ring 4 steps, tree ⌈log2 5⌉ = 3.
  const auto c = make_case("llama-3.1-8b", 64, 8192, 64, "dp=64,zero=0,mbs=1");
  const Device& d = c.cluster.device;
  const double S = 1e9;
  CHECK(all_reduce(make_group(d, 1, 64, false), S) - all_reduce(make_group(d, 1, 64, true), S) ==
        doctest::Approx(2 * 57 * 5e-6).epsilon(1e-9));
  CHECK(reduce_scatter(make_group(d, 1, 64, false), S) - reduce_scatter(make_group(d, 1, 64, true), S) ==
        doctest::Approx(57 * 5e-6).epsilon(1e-9));
  CHECK(reduce_scatter(make_group(d, 1, 5, false), S) - reduce_scatter(make_group(d, 1, 5, true), S) ==
        doctest::Approx(1 * 5e-6).epsilon(1e-9));
  // Through the run option: the DP reduction of a 64-way ZeRO-0 run gets shorter.
  auto tree = c;
  tree.run.options.latency_tree = true;
  tree.run.options.dp_overlap = false;
  auto ring = c;
  ring.run.options.dp_overlap = false;
  CHECK(timing(tree).comm_dp < timing(ring).comm_dp);
}

TEST_CASE("mla_cp_latent: the CP ring passes MLA's compressed latent (§7.5)") {
  // DeepSeek-V3, tp 1, cp 2 ring inside a node, b 1, s 4096, the ring exposed (cp_overlap off):
  // one hop forward of S_kv and one of 2·S_kv backward, each α_intra + S/(0.7·450e9).
  // Decompressed: S_kv = 2048 tokens · 128 heads · (192 + 128) · 2 B = 167,772,160;
  // latent: 2048 · (512 + 64) · 2 B = 2,359,296.
  auto c = make_case("deepseek-v3", 2, 4096, 1, "cp=2,cp_algo=ring,mbs=1");
  c.run.options.cp_overlap = false;
  const double full = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense).cp;
  CHECK(full == doctest::Approx(4e-6 + 3 * 167772160.0 / 315e9).epsilon(1e-9));
  c.run.options.mla_cp_latent = true;
  const double latent = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense).cp;
  CHECK(latent == doctest::Approx(4e-6 + 3 * 2359296.0 / 315e9).epsilon(1e-9));
}

TEST_CASE("window_share: the attention core of sliding-window layers, by hand") {
  // gpt-oss alternates 128-token windows with full layers. At s = 4096 a windowed layer's queries
  // attend 128·4096 − 128·127/2 = 516,160 keys in all, against 4096²/2 = 8,388,608 for a causal
  // layer: share 0.06153106689453125; the two layers' mean 0.530765533447265625.
  Model m;
  m.layer_window = {128, 0};
  CHECK(window_share(m, 4096) == doctest::Approx(0.530765533447265625).epsilon(1e-15));
  // A window at least the sequence is no window; no windows at all is exactly 1.
  CHECK(window_share(m, 100) == 1.0);
  m.layer_window.clear();
  CHECK(window_share(m, 4096) == 1.0);
  // The core FLOPs follow: 2·b·s²·a·(d_qk + d_v)·κ·share.
  m.hidden = 2880;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 64;
  m.ffn = 2880;
  m.layer_window = {128, 0};
  const LayerFlops f = layer_flops(m, FfnKind::dense, 4096, 4096, 1, 1);
  CHECK(flops_core(f) == doctest::Approx(0.5 * 2 * 4096.0 * 4096 * 64 * 128 * 0.530765533447265625));
}

TEST_CASE("window_share: Llama 4's chunked layers, by hand") {
  // 48 layers, 36 attending within chunks of 8192 and 12 full causal. At s = 32768 a chunked query
  // i attends (i mod 8192) + 1 keys: 4 chunks of 8192·8193/2 over s²/2, 0.250030517578125; the
  // mean (36 · 0.250030517578125 + 12)/48 = 0.43752288818359375. At s ≤ 8192 the chunk is the
  // whole sequence: 1. At s = 10000: 8192·8193/2 + 1808·1809/2 = 35,193,864 over 5·10^7.
  Model m;
  m.layer_chunk.assign(48, 8192);
  for (std::size_t l = 3; l < 48; l += 4) m.layer_chunk[l] = 0;
  CHECK(window_share(m, 32768) == doctest::Approx(0.43752288818359375).epsilon(1e-15));
  CHECK(window_share(m, 8192) == 1.0);
  CHECK(window_share(m, 10000) == doctest::Approx((36 * 35193864.0 / 5e7 + 12) / 48).epsilon(1e-15));
}
