// How a fused attention kernel's speed depends on its head width: per score it runs the
// QKᵀ and PV matmuls on the tensor cores, 2·(d_qk + d_v) FLOPs forward, and the softmax's
// exponential on the special-function units (SFU), whose rate does not grow with d. So the
// narrower the head, the larger the exponential's share of the kernel; and the more tensor-core
// FLOPs a device has per SFU operation, the more it shows (Zadouri, Hoehnerbach, Shah, Liu,
// Thakkar, Dao, "FlashAttention-4", 2026: Blackwell doubled the tensor cores' rate over Hopper's
// but not the exponential's, and Blackwell Ultra doubled the latter).
#pragma once

#include "estimators/device.hpp"
#include "estimators/model.hpp"

namespace meshfit {

// The exponential's cost per score in tensor-core FLOPs per SFU operation
// (Device::tensor_flops_per_exp): y = c · that, with c fitted where both widths were measured
// with the same kernel on one device. FlashAttention-4 on B200 (Dao-AILab/flash-attention#2605,
// causal, batch 8, 4,096 tokens, forward): 1,011 TFLOP/s at d = 64 against 1,431 at d = 128, a
// ratio r = 0.7065. Forward time per score ∝ M_f + y with M_f = 4·d tensor-core FLOPs, so
// r = (1 + y/512)/(1 + y/256): y = 363.8, and over B200's 8192/16 = 512, c = 0.71.
inline constexpr double kExponentialsPerScore = 0.71;

// Forward and backward core time at this model's head widths over the time the same FLOPs take at
// d_qk = d_v = 128 (where the framework profiles' core efficiency was fitted):
//   forward  (1 + y/M_f)/(1 + y/512),   M_f = 2·(d_qk + d_v)
//   backward (1 + y/M_b)/(1 + y/1280),  M_b = 6·d_qk + 4·d_v
// The backward redoes QKᵀ and the exponential, then dP = dO·Vᵀ, dV, dQ and dK: one
// exponential per score beside 3·2·d_qk + 2·2·d_v FLOPs. Both are 1 at a 128-wide head and on a
// device without an SFU figure (tensor_flops_per_exp 0). Unfused attention (its softmax a kernel
// of its own, priced by its bytes) does not take them.
struct AttentionWidthScale {
  double forward = 1, backward = 1;
};
AttentionWidthScale attention_width_scale(const Model& m, const Device& d);

}  // namespace meshfit
