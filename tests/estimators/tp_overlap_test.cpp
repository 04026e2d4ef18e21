// TP communication overlap as a strategy dimension (issue 23; memory-model.md §11 O_tpo,
// search-and-time.md §7.5, rule H25): its buffers against hand-computed sizes from the frameworks'
// allocation code, its place outside the allocator, and the rule that it needs SP.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/device_config.hpp"
#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "estimators/strategy_rules.hpp"
#include "same_reports.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Llama-3.1-70B (h 8192) on 64 H100s, s 4096: a micro-batch of one sequence is 4096 tokens.
test::Case llama70b(const std::string& strategy, const std::string& framework = "megatron") {
  return make_case("llama-3.1-70b", 64, 4096, 64, strategy, framework);
}

}  // namespace

TEST_CASE("Megatron's userbuffers: twelve [s·b/cp, h] buffers beside the allocator") {
  // dp 8 zero 1 leaves this layout near the H100's 80 GB, where the allocator's reserve is squeezed
  // (device_total): on an H200 it is not.
  auto off = llama70b("dp=8,tp=8,sp=true,zero=1,mbs=1");
  auto on = llama70b("dp=8,tp=8,sp=true,tp_comm_overlap=true,zero=1,mbs=1");
  off.cluster.device = load_device("h200-141gb");
  on.cluster.device = load_device("h200-141gb");
  const MemoryReport a = reference_memory(off.model, off.run, off.cluster, off.strategy);
  const MemoryReport b = reference_memory(on.model, on.run, on.cluster, on.strategy);
  // Transformer Engine's initialize_ub: qkv/proj/fc1/fc2 × fprop/dgrad/wgrad, each 4096·8192
  // bf16 elements: 12 · 4096 · 8192 · 2 = 805,306,368 bytes (0.75 GiB).
  CHECK(a.stages[0].tp_overlap_buffers == 0);
  CHECK_BYTES(b.stages[0].tp_overlap_buffers, 805'306'368.0);
  // Registered with cudaMalloc, not through PyTorch's caching allocator: M_device grows by
  // exactly that, allocated and reserved do not.
  CHECK(b.stages[0].allocated == a.stages[0].allocated);
  CHECK(b.stages[0].reserved == a.stages[0].reserved);
  CHECK_BYTES(b.stages[0].device - a.stages[0].device, 805'306'368.0);
  test::check_same_memory(b, test::estimate(on));
}

TEST_CASE("userbuffers scale with the micro-batch, shrink with CP, and hold FP8 all-gather inputs") {
  // b = 2: twice the tokens, 1,610,612,736 bytes.
  const auto two = llama70b("dp=8,tp=8,sp=true,tp_comm_overlap=true,zero=1,mbs=2");
  CHECK_BYTES(reference_memory(two.model, two.run, two.cluster, two.strategy).stages[0].tp_overlap_buffers,
              1'610'612'736.0);
  // cp = 2: Megatron's shape is s·b/cp rows, 402,653,184 bytes.
  const auto cp = llama70b("dp=4,tp=8,sp=true,cp=2,cp_algo=ring,tp_comm_overlap=true,zero=1,mbs=1");
  CHECK_BYTES(reference_memory(cp.model, cp.run, cp.cluster, cp.strategy).stages[0].tp_overlap_buffers, 402'653'184.0);
  // FP8 linears: the eight all-gather buffers (qkv_fprop, qkv_dgrad, proj_dgrad, proj_wgrad,
  // fc1_fprop, fc1_dgrad, fc2_dgrad, fc2_wgrad) are uint8, the other four bf16:
  // 4096·8192·(8·1 + 4·2) = 536,870,912 bytes.
  auto fp8 = llama70b("dp=8,tp=8,sp=true,tp_comm_overlap=true,zero=1,mbs=1");
  fp8.run.options.fp8_linears = true;
  const MemoryReport r = reference_memory(fp8.model, fp8.run, fp8.cluster, fp8.strategy);
  CHECK_BYTES(r.stages[0].tp_overlap_buffers, 536'870'912.0);
  test::check_same_memory(r, test::estimate(fp8));
}

TEST_CASE("torchtitan's AsyncTP: one symmetric-memory workspace of two output chunks") {
  // The fused matmul-reduce-scatter asks for 2 · (4096/8 rows) · 8192 · 2 bytes = 16,777,216.
  const auto on = llama70b("dp=8,tp=8,sp=true,tp_comm_overlap=true,zero=3,mbs=1", "torchtitan");
  const MemoryReport r = reference_memory(on.model, on.run, on.cluster, on.strategy);
  CHECK_BYTES(r.stages[0].tp_overlap_buffers, 16'777'216.0);
  test::check_same_memory(r, test::estimate(on));
}

TEST_CASE("the overlap shortens the exposed TP time and leaves the compute alone") {
  const auto off = llama70b("dp=8,tp=8,sp=true,zero=1,mbs=1");
  const auto on = llama70b("dp=8,tp=8,sp=true,tp_comm_overlap=true,zero=1,mbs=1");
  const TimeReport a = reference_step_time(off.model, off.run, off.cluster, off.strategy);
  const TimeReport b = reference_step_time(on.model, on.run, on.cluster, on.strategy);
  CHECK(b.comm_tp < a.comm_tp);
  CHECK(b.step < a.step);
  CHECK(b.stages[0].forward <= a.stages[0].forward);
}

TEST_CASE("H25: TP overlap needs tp > 1 with SP, a framework that has it, and the standard rules") {
  auto c = llama70b("dp=8,tp=8,sp=true,zero=1,mbs=1");
  c.strategy.tp_comm_overlap = true;
  CHECK(rule_holds(HardRule::H25, c.model, c.run, c.cluster, c.strategy));
  c.strategy.sp = false;
  CHECK_FALSE(rule_holds(HardRule::H25, c.model, c.run, c.cluster, c.strategy));
  CHECK(explain_rule(HardRule::H25, c.model, c.run, c.cluster, c.strategy) ==
        "H25: tp_comm_overlap needs tp > 1 with sp=true (tp = 8, sp = false)");
  c.strategy.sp = true;
  c.run.profile.framework = Framework::deepspeed;
  CHECK_FALSE(rule_holds(HardRule::H25, c.model, c.run, c.cluster, c.strategy));
  c.run.profile.framework = Framework::megatron;
  c.run.rules = Rules::sapp_nd;
  CHECK_FALSE(rule_holds(HardRule::H25, c.model, c.run, c.cluster, c.strategy));
  CHECK(std::string(rule_name(HardRule::H25)) == "tp_overlap_needs_sp");
}

namespace {

// One layer of Llama-3.1-70B at tp 8 with SP on an H100, 8192 tokens per micro-batch, counted by
// hand: its four forward collectives and the GEMM beside each (search-and-time.md §7.3-§7.5).
struct HandLayer {
  double collective;  // each all-gather and reduce-scatter: 7 ring steps of α, 7/8·S at η_intra·B_intra
  double gemm[4];     // qkv, o, fc1, fc2 at η_max·F_peak, plus τ_kern/η_max each
};

HandLayer llama70b_tp8_layer() {
  const double S = 8192.0 * 8192 * 2;  // n·h·β_a
  const double bw = 0.70 * 450e9, rate = 0.65 * 989e12, launch = 1e-6 / 0.65;
  const double n = 8192, h = 8192, tp = 8;
  HandLayer l{};
  l.collective = 7 * 2e-6 + 7.0 / 8 * S / bw;                             // 386.8 µs
  l.gemm[0] = 2 * n * h * (64 * 128 + 2 * 8 * 128) / tp / rate + launch;  // qkv: 268.8 µs
  l.gemm[1] = 2 * n * h * h / tp / rate + launch;                         // o: 215.3 µs
  l.gemm[2] = 2 * n * h * 28672 * 2 / tp / rate + launch;                 // fc1 (gate and up)
  l.gemm[3] = 2 * n * 28672 * h / tp / rate + launch;                     // fc2
  return l;
}

// Exposed time of one collective C cut into 8 pieces beside its own GEMM G (Wang et al. 2023):
// C/8 + max(0, C − G)·7/8 at the ideal, of which the framework realises the share ω_d of the hiding.
double exposed(double C, double G, double omega) {
  const double ideal = C / 8 + std::max(0.0, C - G) * 7 / 8;
  return C - omega * (C - ideal);
}

}  // namespace

TEST_CASE("decomposed TP overlap hides each collective only behind the GEMM that reads or writes its tensor") {
  auto c = make_case("llama-3.1-70b", 64, 8192, 64, "dp=8,tp=8,sp=true,pp=1,mbs=1");
  const HandLayer l = llama70b_tp8_layer();
  const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK(plain.tp_forward == doctest::Approx(4 * l.collective));
  for (int i = 0; i < 4; ++i) CHECK(plain.tp_pair_gemm[i] == doctest::Approx(l.gemm[i]));
  c.strategy.tp_comm_overlap = true;
  const LayerTime split = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  // qkv's and o's GEMMs are shorter than their collectives, so part of those stays exposed: 151.6
  // and 198.4 µs; fc1's and fc2's hide all but their first piece, 48.4 µs each. In all 446.8 µs,
  // where hiding the layer's collectives behind its four GEMMs together would leave 4C/8 = 193.4.
  double want = 0;
  for (int i = 0; i < 4; ++i) want += exposed(l.collective, l.gemm[i], 1.0);
  CHECK(want == doctest::Approx(446.8e-6).epsilon(1e-3));
  CHECK(split.tp_forward == doctest::Approx(want));
  CHECK(split.tp == doctest::Approx(2 * split.tp_forward));
  // The compute itself is untouched.
  CHECK(split.forward == plain.forward);
}

TEST_CASE("torchtitan's AsyncTP realises half of the ideal decomposed overlap (its profile's ω_d)") {
  // ω_d = 0.5, fitted on torchtitan's Llama-3-70B AsyncTP pairs (data/frameworks/torchtitan.yaml).
  auto c = make_case("llama-3.1-70b", 64, 8192, 64, "dp=8,tp=8,sp=true,zero=3,mbs=1", "torchtitan");
  CHECK(c.run.profile.tp_overlap_efficiency == 0.5);
  const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  c.strategy.tp_comm_overlap = true;
  const LayerTime split = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  // The same collectives as Megatron's; its GEMMs are its own kernels' (plain.tp_pair_gemm).
  const double C = llama70b_tp8_layer().collective;
  CHECK(plain.tp_forward == doctest::Approx(4 * C));
  double want = 0;
  for (int i = 0; i < 4; ++i) want += exposed(C, plain.tp_pair_gemm[i], 0.5);
  CHECK(split.tp_forward == doctest::Approx(want));
  // Megatron's profile keeps Transformer Engine's userbuffers at the ideal (ω_d = 1).
  CHECK(llama70b("dp=8,tp=8,sp=true,zero=1,mbs=1").run.profile.tp_overlap_efficiency == 1.0);
}

TEST_CASE("an MoE layer's routed experts hide none of the attention's TP collectives") {
  // Mixtral-8x7B has no shared expert: its MoE layer's SP collectives are the attention's two, and
  // the routed experts' GEMMs (whose tokens move over EP) sit beside none of them.
  auto c = make_case("mixtral-8x7b", 64, 4096, 64, "dp=8,tp=8,sp=true,ep=8,zero=1,mbs=1");
  const LayerTime moe = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK(moe.tp_pair_gemm[0] > 0);
  CHECK(moe.tp_pair_gemm[1] > 0);
  CHECK(moe.tp_pair_gemm[2] == 0);
  CHECK(moe.tp_pair_gemm[3] == 0);
  // Without overlap those two cost 2·(7α + 7/8·S/(η_intra·B_intra)), S = 4096 tokens · 4096 · 2 B.
  CHECK(moe.tp_forward == doctest::Approx(2 * (7 * 2e-6 + 7.0 / 8 * 4096.0 * 4096 * 2 / (0.70 * 450e9))));
}
