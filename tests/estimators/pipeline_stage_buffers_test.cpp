// PyTorch pipelining's PipelineStage buffers and deferred gradients a chunk at a time
// (estimators/pipeline_stage_buffers.hpp, memory-model.md §8.6 and ruling 10).
#include "estimators/pipeline_stage_buffers.hpp"

#include <doctest/doctest.h>

#include "estimator_fixture.hpp"

using namespace meshfit;
using test::make_case;

namespace {

// Llama-3.1-405B on 512 GPUs, tp 8 with SP, pp 8, FSDP 8, full recompute, under torchtitan.
// A stage boundary per micro-batch of b = 4 at s = 8192: 4·8192/8 tokens × 16,384 × 2 bytes =
// 134,217,728; the logits per micro-batch: 4·8192 tokens × 128,256/8 × 2 bytes = 1,050,673,152.
constexpr double kBoundary = 134'217'728.0;
constexpr double kLogits = 1'050'673'152.0;

test::Case llama405(const std::string& strategy, std::int64_t global_batch) {
  return make_case("llama-3.1-405b", 512, 8192, global_batch, strategy, "torchtitan");
}

}  // namespace

TEST_CASE("PyTorch pipelining holds receive buffers and outputs per micro-batch (1F1B, m = 8)") {
  auto c = llama405("tp=8,sp=true,pp=8,zero=3,recompute=full,mbs=4", 256);
  REQUIRE(c.strategy.num_microbatches == 8);
  const StageBoundary b = stage_boundary(c.model, c.run, c.strategy);
  CHECK_BYTES(b.activation, kBoundary);
  CHECK_BYTES(b.logits, kLogits);
  // Today's torchtitan: the first stage 8 gradient receive buffers and its 8 sent outputs, held
  // by their sends; a middle stage 8 input buffers besides; the last 8 input buffers (its logits
  // go: return_outputs=False).
  MemoryReport r = test::estimate(c);
  CHECK_BYTES(r.stages[0].pipeline_buffers, 16 * kBoundary);
  CHECK_BYTES(r.stages[1].pipeline_buffers, 24 * kBoundary);
  CHECK_BYTES(r.stages[7].pipeline_buffers, 8 * kBoundary);
  // Before October 2025 torchtitan's last stage also kept every micro-batch's logits.
  c.run.options.pipeline_outputs = PipelineOutputs::all;
  r = test::estimate(c);
  CHECK_BYTES(r.stages[0].pipeline_buffers, 16 * kBoundary);
  CHECK_BYTES(r.stages[1].pipeline_buffers, 24 * kBoundary);
  CHECK_BYTES(r.stages[7].pipeline_buffers, 8 * kBoundary + 8 * kLogits);
  // With sends released once complete (pytorch#193903), the receive buffers alone.
  auto released = c;
  released.run.options.pipeline_outputs = PipelineOutputs::none;
  const MemoryReport n = test::estimate(released);
  CHECK_BYTES(n.stages[0].pipeline_buffers, 8 * kBoundary);
  CHECK_BYTES(n.stages[1].pipeline_buffers, 16 * kBoundary);
  CHECK_BYTES(n.stages[7].pipeline_buffers, 8 * kBoundary);
  // A stage's input lives in its receive buffer: stage 1's 7 micro-batches in flight count it
  // there, not in A(1,0).
  auto off = c;
  off.run.options.pipeline_stage_buffers = false;
  const MemoryReport without = test::estimate(off);
  CHECK(without.stages[1].pipeline_buffers == 0);
  REQUIRE(r.stages[1].chunk_inflight[0] == 7);
  CHECK_BYTES(without.stages[1].activations - r.stages[1].activations, 7 * kBoundary);
  CHECK_BYTES(without.stages[0].activations - r.stages[0].activations, 0);
  // Megatron-Core frees its sent outputs and receives into fresh tensors: nothing held.
  const auto mega = make_case("llama-3.1-405b", 512, 8192, 256, "tp=8,sp=true,pp=8,zero=1,recompute=full,mbs=4");
  CHECK(test::estimate(mega).stages[1].pipeline_buffers == 0);
}

TEST_CASE("PyTorch pipelining's buffers per chunk of an interleaved stage, and a compiled loss's logits") {
  // vpp 2: rank 7 holds virtual stages 7 and 15 (the last): 8 input and 8 gradient buffers and 8
  // sent outputs for the first, 8 input buffers for the second, and its 8 logits where the last
  // stage keeps them.
  auto c = llama405("tp=8,sp=true,pp=8,vpp=2,zero=3,recompute=full,mbs=4", 256);
  REQUIRE(c.strategy.num_microbatches == 8);
  CHECK_BYTES(test::estimate(c).stages[7].pipeline_buffers, 32 * kBoundary);
  c.run.options.pipeline_outputs = PipelineOutputs::all;
  CHECK_BYTES(test::estimate(c).stages[7].pipeline_buffers, 32 * kBoundary + 8 * kLogits);
  // A compiled loss keeps the logits for its backward: where the last stage keeps its outputs they
  // are the held output, not counted again per micro-batch in flight on the last virtual stage.
  const StageBoundary b = stage_boundary(c.model, c.run, c.strategy);
  CHECK_BYTES(chunk_bytes_in_stage_buffers(b, c.run, 15, 16), kBoundary);
  c.run.options.compiled_loss = true;
  CHECK_BYTES(chunk_bytes_in_stage_buffers(b, c.run, 15, 16), kBoundary + kLogits);
  CHECK(chunk_bytes_in_stage_buffers(b, c.run, 0, 16) == 0);
  c.run.options.pipeline_outputs = PipelineOutputs::sent;
  CHECK_BYTES(chunk_bytes_in_stage_buffers(b, c.run, 15, 16), kBoundary);
}

TEST_CASE("deferred gradients are held a chunk at a time under interleaved 1F1B in one round") {
  // 126 layers in 16 virtual stages, torchtitan counting the embedding and the loss as layers:
  // stage 1 holds virtual stages 1 and 9, 8 layers each. Per layer per rank 398,491,648
  // elements (framework_behaviour_test), 4 bytes each.
  const double layer = 4.0 * 398'491'648;
  const auto one_round = llama405("tp=8,sp=true,pp=8,vpp=2,zero=3,recompute=full,mbs=1", 64);
  REQUIRE(one_round.strategy.num_microbatches == 8);
  CHECK(defers_chunk_by_chunk(one_round.run, one_round.strategy));
  CHECK_BYTES(test::estimate(one_round).stages[1].deferred_grads, 8 * layer);
  // m = 16 = 2·pp: two rounds, the chunks' backwards alternate, both chunks' gradients held.
  const auto two_rounds = llama405("tp=8,sp=true,pp=8,vpp=2,zero=3,recompute=full,mbs=1", 128);
  REQUIRE(two_rounds.strategy.num_microbatches == 16);
  CHECK_FALSE(defers_chunk_by_chunk(two_rounds.run, two_rounds.strategy));
  CHECK_BYTES(test::estimate(two_rounds).stages[1].deferred_grads, 16 * layer);
}
