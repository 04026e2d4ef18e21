// Dynamic FP8 scaling's quantisation traffic (search-and-time.md §7.3, issue 20): before each FP8
// GEMM of a linear, its bf16 operands are scaled and cast to float8 by memory-bound kernels. Their
// cost grows with the operands (tokens × width), the GEMM's with tokens × width × width, so the
// net speedup of FP8 falls with the model's width per TP rank: torchao's float8 README and
// torchtitan's float8.md ("the speedup ... outweighs the overhead of dynamic quantization" only
// for large enough GEMMs).
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// HBM bytes one device moves to quantise the FP8 linears of one body layer for one micro-batch.
// Forward: the inputs' and weights' casts of the forward GEMMs (and, tensorwise, the transposed
// copies the backward will read); backward: the output gradients' casts and the rest.
struct Fp8CastBytes {
  double forward = 0, backward = 0;
};

// 0 unless the run's linears are FP8 and its framework prices the casts (FrameworkProfile::fp8_casts).
// `rho` is ρ_e, the busiest rank's routed-token load (§7.2).
Fp8CastBytes fp8_cast_bytes(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, double rho);

// Whether SP's all-gathers carry float8 (1 byte per element) rather than bf16.
// Transformer Engine (fp8_casts none) quantises a column-parallel linear's input on the sequence
// shard and gathers the FP8 data, under every recipe: its norm writes FP8 and
// gather_along_first_dim moves that (transformer_engine/pytorch/module/layernorm_linear.py, v1.8),
// and since 2.0 the gather takes the input's quantizer (delayed and current scaling's FP8 data,
// MXFP8's data and block scales; pytorch/distributed.py). Userbuffers' all-gather buffers are FP8
// too (module/base.py, fp8_buf). torchao's float8
// tensor parallelism (torchao/float8/float8_tensor_parallel.py: Float8ColwiseParallel and
// PrepareFloat8ModuleInput cast the sequence shard, then redistribute; Float8RowwiseParallel casts
// the output gradient before its all-gather), which torchtitan applies with tensorwise scaling
// only ("for float8 with rowwise scaling, all distributed communication is done in high
// precision", torchtitan components/quantization/float8.md; its MXFP8 linears likewise).
bool fp8_tp_all_gathers(const Run& run, const Strategy& s);

}  // namespace meshfit
