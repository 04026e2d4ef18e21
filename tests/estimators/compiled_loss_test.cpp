// torch.compile on the loss (issue 20; memory-model.md §9.3): what the fused cross-entropy keeps
// for its backward and what its backward holds, against bytes counted by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/layer_time.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Llama-3.1-8B (h 4096, V 128,256, a multiple of torchtitan's padding) under torchtitan on 8
// devices, FSDP, one 8,192-token sequence per micro-batch: no TP, so the whole vocabulary.
test::Case llama8b() { return make_case("llama-3.1-8b", 8, 8192, 8, "dp=8,zero=3,mbs=1", "torchtitan"); }

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
  const double bw = d.eta_hbm * d.hbm_bandwidth, elements = 8192.0 * 128256;
  const LossTime eager = loss_time(c.run, d, c.strategy, 128256);
  // torchtitan.yaml: 22 bytes forward, 26 backward per element (upcast, log-softmax, NLL).
  CHECK(eager.forward == doctest::Approx(22 * elements / bw).epsilon(1e-12));
  CHECK(eager.backward == doctest::Approx(26 * elements / bw).epsilon(1e-12));
  // At TP 8 with SP the vocabulary is split (loss parallel's decomposed ops, 38 + 38 bytes) over
  // 128,256 / 8 = 16,032 entries per rank.
  auto tp = make_case("llama-3.1-8b", 8, 8192, 1, "dp=1,tp=8,sp=true,zero=0,mbs=1", "torchtitan");
  const LossTime parallel = loss_time(tp.run, tp.cluster.device, tp.strategy, 128256);
  CHECK(parallel.forward == doctest::Approx(38 * elements / 8 / bw).epsilon(1e-12));
  CHECK(parallel.backward == doctest::Approx(38 * elements / 8 / bw).epsilon(1e-12));
  // Compiled: the logits read once forward, read and their gradient written backward (bf16).
  c.run.options.compiled_loss = true;
  const LossTime compiled = loss_time(c.run, d, c.strategy, 128256);
  CHECK(compiled.forward == doctest::Approx(2 * elements / bw).epsilon(1e-12));
  CHECK(compiled.backward == doctest::Approx(4 * elements / bw).epsilon(1e-12));
}
