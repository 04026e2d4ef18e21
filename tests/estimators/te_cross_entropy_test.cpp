// Transformer Engine's fused cross-entropy (RunOptions::te_cross_entropy; memory-model.md §2.4,
// §7.7, §9.3): its Triton kernel writes the logits' gradient into the logits during the forward
// (transformer_engine/pytorch/triton/cross_entropy.py), so the loss keeps the bf16 logits and
// holds no transient. Bytes counted by hand against Megatron's unfused vocab-parallel loss.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/validation_cases.hpp"
#include "estimator_fixture.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/layer_time.hpp"
#include "estimators/reference_memory.hpp"
#include "same_reports.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Llama-3.1-8B (h 4096, V 128,256, a multiple of Megatron's padding of 128) under Megatron on 8
// devices, one 4,096-token sequence per micro-batch, no TP: the whole vocabulary on the rank.
test::Case llama8b() { return make_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1,recompute=none,mbs=1", "megatron"); }

}  // namespace

TEST_CASE("Transformer Engine's cross-entropy keeps the bf16 logits and holds no transient") {
  auto c = llama8b();
  const double n = 4096, v = 128256;
  const OutputActivation unfused = output_activation(c.model, c.run, c.strategy, n, v);
  // Megatron's unfused loss keeps fp32 exp-logits, 4 bytes per logit, and holds 6 more while it
  // runs: 4,096 · 128,256 · 6 = 3,152,019,456 (EX11's Tr_logits).
  CHECK_BYTES(logits_transient(c.run, c.strategy, n, v), 3'152'019'456.0);
  c.run.options.te_cross_entropy = true;
  const OutputActivation fused = output_activation(c.model, c.run, c.strategy, n, v);
  // Kept: 2 bytes per logit instead of 4, 4,096 · 128,256 · 2 = 1,050,673,152 bytes fewer.
  CHECK_BYTES(unfused.kept - fused.kept, 1'050'673'152.0);
  CHECK(logits_transient(c.run, c.strategy, n, v) == 0);

  // The whole stage: the reference and the search's evaluator agree, and the difference is the
  // kept bytes above plus the transient, where the logits set the peak.
  auto u = llama8b();
  const MemoryReport before = reference_memory(u.model, u.run, u.cluster, u.strategy);
  const MemoryReport after = reference_memory(c.model, c.run, c.cluster, c.strategy);
  test::check_same_memory(after, test::estimate(c));
  const StageMemory& b0 = before.stages[0];
  const StageMemory& a0 = after.stages[0];
  CHECK_BYTES(b0.activations - a0.activations, 1'050'673'152.0);
  CHECK_BYTES(b0.tr_logits, 3'152'019'456.0);
  CHECK(a0.tr_logits == 0);
}

TEST_CASE("Transformer Engine's cross-entropy: two HBM passes over the logits each way") {
  // 4,096 tokens over 128,256 entries: 525,336,576 logit elements.
  auto c = llama8b();
  const Device& d = c.cluster.device;
  const double bw = d.eta_hbm * d.hbm_bandwidth, elements = 4096.0 * 128256;
  const LossTime unfused = loss_time(c.run, d, c.strategy, 128256);
  // megatron.yaml: 38 bytes forward, 14 backward per element.
  CHECK(unfused.forward == doctest::Approx(38 * elements / bw).epsilon(1e-12));
  CHECK(unfused.backward == doctest::Approx(14 * elements / bw).epsilon(1e-12));
  // Fused: the forward reads each bf16 logit and writes its gradient over it (4 bytes); the
  // backward scales it by the per-token loss gradient, read and written again (4 bytes).
  c.run.options.te_cross_entropy = true;
  const LossTime fused = loss_time(c.run, d, c.strategy, 128256);
  CHECK(fused.forward == doctest::Approx(4 * elements / bw).epsilon(1e-12));
  CHECK(fused.backward == doctest::Approx(4 * elements / bw).epsilon(1e-12));
}

TEST_CASE("validate: Transformer Engine's fused cross-entropy where a case states it or comes from Megatron-Bridge") {
  const auto cases = load_validation_cases(test::data_path("validation/te-cross-entropy.yaml"));
  REQUIRE(cases.size() == 4);
  CHECK(cases[0].run.options.te_cross_entropy);
  CHECK_FALSE(cases[1].run.options.te_cross_entropy);  // "... off"
  // Unstated: Megatron-Bridge's default, listed as a default taken; Megatron-LM's is unfused.
  CHECK(cases[2].run.options.te_cross_entropy);
  const auto& notes = cases[2].defaults_taken;
  CHECK(std::find(notes.begin(), notes.end(), "source Megatron-Bridge -> Transformer Engine fused cross-entropy") !=
        notes.end());
  CHECK_FALSE(cases[3].run.options.te_cross_entropy);
}
