// The FP8 copies of the GEMM weights that Transformer Engine keeps on the device (memory-model.md
// §6.2): its linears quantise each weight once per step and keep the result for every
// micro-batch (Megatron-Core passes is_first_microbatch, so TE's Linear keeps its "weight"
// workspace: transformer_engine/pytorch/module/linear.py, cache_name), or, under Megatron's
// --fp8-param-gather, the weights are those FP8 tensors themselves.
#pragma once

#include "estimators/device.hpp"
#include "estimators/run.hpp"

namespace meshfit {

// Bytes per weight element of one FP8 copy as Transformer Engine lays it out on `device`: the
// row-wise data the forward GEMM reads, and a column-wise copy for the backward's data-gradient
// GEMM where the device needs one. Per-tensor scaling (delayed or current) stores the transpose
// on devices without non-TN FP8 GEMMs, everything before datacenter Blackwell
// (transformer_engine/pytorch/utils.py, is_non_tn_fp8_gemm_supported: compute capability 10.x);
// MXFP8 quantises along rows and along columns separately everywhere, each with one E8M0 scale
// per 32 elements (mxfp8_tensor.py): 2·(1 + 1/32).
double te_fp8_weight_bytes(Fp8Scaling scaling, const Device& device);

}  // namespace meshfit
