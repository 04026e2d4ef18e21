// torch.compile on the loss (issue 20; memory-model.md §9.3): what the fused cross-entropy keeps
// for its backward and what its backward holds, against bytes counted by hand.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/layer_activations.hpp"

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
