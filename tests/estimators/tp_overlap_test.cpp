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

TEST_CASE("torchtitan's AsyncTP realises half of the ideal decomposed overlap (its profile's ω_d)") {
  // ω_d = 0.5, fitted on torchtitan's Llama-3-70B AsyncTP pairs (data/frameworks/torchtitan.yaml):
  // exposed = C − 0.5·(C − ideal), ideal = C/8 + max(0, C − G)·7/8.
  auto c = llama70b("dp=8,tp=8,sp=true,zero=3,mbs=1", "torchtitan");
  CHECK(c.run.profile.tp_overlap_efficiency == 0.5);
  const LayerTime plain = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  c.strategy.tp_comm_overlap = true;
  const LayerTime split = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  const double C = plain.tp_forward, G = plain.projection_forward;
  const double ideal = C / 8 + std::max(0.0, C - G) * 7 / 8;
  CHECK(split.tp_forward == doctest::Approx(C - 0.5 * (C - ideal)));
  // Megatron's profile keeps Transformer Engine's userbuffers at the ideal (ω_d = 1).
  CHECK(llama70b("dp=8,tp=8,sp=true,zero=1,mbs=1").run.profile.tp_overlap_efficiency == 1.0);
}
