// What torch.distributed.pipelining's PipelineStage (torch/distributed/pipelining/stage.py, the
// pipeline runtime torchtitan drives) holds on a rank besides the layers' own activations
// (docs/spec/memory-model.md §8.6). Megatron-Core holds none of it: it receives into a fresh
// tensor per transfer and frees each stage output's storage once sent (deallocate_output_tensor).
#pragma once

#include <cstdint>
#include <vector>

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Whether the run keeps PipelineStage's buffers: pp > 1 under RunOptions::pipeline_stage_buffers,
// which defaults to on for the torchtitan framework.
bool holds_pipeline_stage_buffers(const Run& run, const Strategy& s);

// The tensors a stage passes per micro-batch, in bytes: the activation sent to the next stage
// (b·s/cp tokens of the SP shard, h·β_a each: torchtitan's TP plan hands the last block's output
// over as its local sequence shard) and the last stage's output, the logits (the vocabulary
// shard under a vocabulary-parallel loss, β_a each).
struct StageBoundary {
  double activation = 0, logits = 0;
};
StageBoundary stage_boundary(const Model& m, const Run& run, const Strategy& s);

// The bytes of one micro-batch's A(i,c) that the buffers below already hold, so the chunk does
// not count them again: a chunk after the first virtual stage receives its input into its
// receive buffer (its first layer's saved input is that buffer), and under a compiled loss the
// last virtual stage's kept logits are its held output.
double chunk_bytes_in_stage_buffers(const StageBoundary& b, const Run& run, std::int64_t vstage, std::int64_t vstages);

// The bytes the rank's chunks (their virtual stages `vstages` of `nv`) hold for the whole step,
// with m = s.num_microbatches, per chunk:
//  - a receive buffer per micro-batch for its input, after the first virtual stage
//    (_prepare_forward_infra allocates args_recv_info for every chunk id, kept across steps);
//  - one per micro-batch for the gradient of its output, before the last virtual stage
//    (_prepare_backward_infra's grad_recv_info);
//  - every micro-batch's output, as RunOptions::pipeline_outputs says: by default each sent
//    activation before the last virtual stage, which fwd_cache holds until its backward and its
//    pending send until the step's closing wait (pytorch/pytorch#193903 describes and, open,
//    removes it); under `all` also the last virtual stage's logits, kept in output_chunks until the
//    next step (torchtitan before it stepped with return_outputs=False, pytorch#165822).
double pipeline_stage_buffer_bytes(const StageBoundary& b, const Run& run, const Strategy& s,
                                   const std::vector<std::int64_t>& vstages, std::int64_t nv);

}  // namespace meshfit
