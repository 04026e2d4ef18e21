// The loss's kernels (issue 20; memory-model.md §2.4, §7.7, §9.3): what the cross-entropy keeps for
// its backward, what it holds while it runs and its HBM time, eager, under torch.compile and as
// Transformer Engine's fused kernel, against bytes counted by hand.
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

// Llama-3.1-8B (h 4096, V 128,256, a multiple of torchtitan's padding) under torchtitan on 8
// devices, FSDP, one 8,192-token sequence per micro-batch: no TP, so the whole vocabulary.
test::Case llama8b() { return make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3,mbs=1", "torchtitan"); }

// The same model under Megatron on 8 devices, one 4,096-token sequence per micro-batch, no TP (V
// is a multiple of Megatron's padding of 128).
test::Case llama8b_megatron() {
  return make_case("llama-3.1-8b", 8, 4096, 8, "dp=8,zero=1,recompute=none,mbs=1", "megatron");
}

// A loss time against its bytes per logit element at the device's η_hbm·B_hbm.
void check_loss_bytes(const LossTime& t, const Device& d, double elements, double forward, double backward) {
  const double bw = d.eta_hbm * d.hbm_bandwidth;
  CHECK(t.forward == doctest::Approx(forward * elements / bw).epsilon(1e-12));
  CHECK(t.backward == doctest::Approx(backward * elements / bw).epsilon(1e-12));
}

}  // namespace

TEST_CASE("a compiled loss keeps the bf16 logits and a logsumexp, not fp32 log-probabilities") {
  auto c = llama8b();
  const double n = 8192, v = 128256;
  const OutputActivation eager = output_activation(c.model, c.run, c.strategy, n, v);
  c.run.options.compiled_loss = true;
  const OutputActivation compiled = output_activation(c.model, c.run, c.strategy, n, v);
  // Kept: 8,192 · (128,256 · 2 + 4) instead of 8,192 · 128,256 · 4 (the rest, the head's saved
  // input and norm, is the same): a difference of 8,192 · (128,256 · 2 − 4) = 2,101,313,536.
  CHECK_BYTES(eager.kept - compiled.kept, 2'101'313'536.0);
  // The backward writes one bf16 gradient per logit: 8,192 · 128,256 · 2 = 2,101,346,304 bytes,
  // instead of the eager log-softmax backward's 8 bytes per logit (torchtitan.yaml).
  CHECK_BYTES(compiled.logits, 2'101'346'304.0);
  CHECK_BYTES(eager.logits, 4 * 2'101'346'304.0);
  CHECK(logits_transient(c.run, c.strategy, n, v) == compiled.logits);
}

TEST_CASE("the loss's HBM time: torchtitan's eager cross-entropy, its loss parallel, compiled") {
  // 8,192 tokens over the whole 128,256-entry vocabulary: 1,050,673,152 logit elements.
  auto c = llama8b();
  const Device& d = c.cluster.device;
  const double elements = 8192.0 * 128256;
  const LossTime eager = loss_time(c.run, d, c.strategy, 128256);
  // torchtitan.yaml: 22 bytes forward, 26 backward per element (upcast, log-softmax, NLL).
  check_loss_bytes(eager, d, elements, 22, 26);
  // At TP 8 with SP the vocabulary is split (loss parallel's decomposed ops, 38 + 38 bytes) over
  // 128,256 / 8 = 16,032 entries per rank.
  auto tp = make_case("llama-3.1-8b", 8, 8192, 1, "dp=1,tp=8,sp=true,zero=0,mbs=1", "torchtitan");
  const LossTime parallel = loss_time(tp.run, tp.cluster.device, tp.strategy, 128256);
  check_loss_bytes(parallel, tp.cluster.device, elements / 8, 38, 38);
  // Compiled: the logits read once forward, read and their gradient written backward (bf16).
  c.run.options.compiled_loss = true;
  const LossTime compiled = loss_time(c.run, d, c.strategy, 128256);
  check_loss_bytes(compiled, d, elements, 2, 4);
}

// Transformer Engine's fused cross-entropy (RunOptions::te_cross_entropy): its Triton kernel writes
// the logits' gradient into the logits during the forward (transformer_engine/pytorch/triton/
// cross_entropy.py), so the loss keeps the bf16 logits and holds no transient.
TEST_CASE("Transformer Engine's cross-entropy keeps the bf16 logits and holds no transient") {
  auto c = llama8b_megatron();
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
  auto u = llama8b_megatron();
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
  auto c = llama8b_megatron();
  const Device& d = c.cluster.device;
  const double elements = 4096.0 * 128256;
  const LossTime unfused = loss_time(c.run, d, c.strategy, 128256);
  // megatron.yaml: 38 bytes forward, 14 backward per element.
  check_loss_bytes(unfused, d, elements, 38, 14);
  // Fused: the forward reads each bf16 logit and writes its gradient over it (4 bytes); the
  // backward scales it by the per-token loss gradient, read and written again (4 bytes).
  c.run.options.te_cross_entropy = true;
  const LossTime fused = loss_time(c.run, d, c.strategy, 128256);
  check_loss_bytes(fused, d, elements, 4, 4);
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
