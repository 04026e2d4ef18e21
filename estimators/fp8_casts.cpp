#include "estimators/fp8_casts.hpp"

#include "estimators/layer_flops.hpp"

namespace meshfit {

namespace {

// Bytes per element of one operand's casts, forward and backward, from torchao's roofline model of
// float8 training (torchao/testing/training/roofline_utils.py, get_tensor_memory_traffic_ovhd_s,
// without fusion into the producing op; pytorch/ao @36027d82). bf16 is 2 bytes, float8 1.
struct OperandBytes {
  double forward = 0, backward = 0;
};
struct RecipeBytes {
  OperandBytes input, weight, grad_output;
};

RecipeBytes recipe_bytes(Fp8Scaling scaling) {
  if (scaling == Fp8Scaling::tensorwise) {
    // Activations and gradients: an amax pass (read 2), then one cast that writes both the
    // row-major and the column-major float8 copies (read 2, write 1 + 1): 6, where the tensor
    // is made. Weights: amax (2), the forward cast (2 + 1), the backward's transposed cast (2 + 1).
    return {{6, 0}, {5, 3}, {0, 6}};
  }
  if (scaling == Fp8Scaling::rowwise) {
    // Rowwise: each row its own scale, so no global amax pass, but the column-wise operand of
    // the weight-gradient GEMM needs a transposed bf16 copy and a second cast. Activations: cast
    // and transposed copy (read 2, write 1 + 2), then the transposed cast in the backward
    // (2 + 1). Gradients: the same 5 + 3, both in the backward. Weights: cast (2 + 1) forward;
    // transpose (2 + 2) and cast (2 + 1) backward.
    return {{5, 3}, {3, 7}, {0, 8}};
  }
  // MXFP8 (the roofline's mxfp8_cublas): every operand is cast along each of its two dimensions
  // by its own kernel (read 2, write 1, and one e8m0 scale byte per 32 elements), the one its
  // forward GEMM reads in the forward and the other in the backward; the output gradient both in
  // the backward.
  constexpr double cast = 2 + 1 + 1.0 / 32;
  return {{cast, cast}, {cast, cast}, {0, 2 * cast}};
}

}  // namespace

bool fp8_tp_all_gathers(const Run& run, const Strategy& s) {
  if (!run.options.fp8_linears || !s.sp || s.tp <= 1) return false;
  // Transformer Engine, every recipe; torchao, tensorwise only (not rowwise, not MXFP8).
  return run.profile.fp8_casts == Fp8Casts::none || run.options.fp8_scaling == Fp8Scaling::tensorwise;
}

Fp8CastBytes fp8_cast_bytes(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, double rho) {
  Fp8CastBytes bytes;
  if (run.profile.fp8_casts != Fp8Casts::torchao || !run.options.fp8_linears) return bytes;
  const RecipeBytes r = recipe_bytes(run.options.fp8_scaling);
  const double tp = static_cast<double>(s.tp), h = static_cast<double>(m.hidden);
  const double M = static_cast<double>(s.micro_batch) * static_cast<double>(run.seq) / static_cast<double>(s.cp);
  // float8 TP casts on the sequence shard, once for all the linears that read an input.
  const bool shared_cast = fp8_tp_all_gathers(run, s);
  // A column-parallel linear's input and a row-parallel linear's output gradient are the whole
  // sequence of width h on every TP rank, unless float8 TP casts them on the sequence shard first.
  const double gathered = shared_cast ? h / tp : h;

  // Per token: elements of inputs and output gradients cast; per micro-batch: weight elements.
  double inputs = 0, grads = 0, weights = 0;
  // Each Float8Linear casts its own input, and torchtitan's models keep q, k and v (and gate and
  // up) as separate linears over one input, so that input is cast once per linear; float8 TP's
  // PrepareFloat8ModuleInput casts it once for all of them (torchao float8_tensor_parallel.py).
  // The cost of those repeated casts on the small k and v projections is what made rowwise
  // float8 with vanilla TP no faster than bf16 (pytorch/torchtitan#1207).
  // A column-parallel group of `readers` linears: input width `in` (of which `cast` elements per
  // token are cast on this rank), `out` output columns per rank in all.
  auto column = [&](double in, double cast, double out, double readers) {
    inputs += cast * (shared_cast ? 1 : readers);
    grads += out;
    weights += in * out;
  };
  auto row = [&](double in_per_rank) {  // a row-parallel linear back to h
    inputs += in_per_rank;
    grads += gathered;
    weights += in_per_rank * h;
  };

  const double a = static_cast<double>(m.heads);
  if (m.attention == AttentionKind::mla) {
    // Down-projections (not TP-split), then the up-projections of the latents (TP-split by head).
    const double rq = static_cast<double>(m.q_lora_rank), rkv = static_cast<double>(m.kv_lora_rank);
    const double d_qk = static_cast<double>(m.qk_head_dim()), nope = static_cast<double>(m.qk_nope_dim);
    const double rope = static_cast<double>(m.qk_rope_dim), dv = static_cast<double>(m.v_dim());
    const double q_out = a * d_qk / tp;
    if (rq > 0) {
      column(h, gathered, rq + rkv + rope, 2);  // wq_a, wkv_a
      column(rq, rq, q_out, 1);
    } else {
      column(h, gathered, q_out + rkv + rope, 2);  // wq, wkv_a
    }
    column(rkv, rkv, a * (nope + dv) / tp, 1);
    row(a * dv / tp);
  } else {
    const double d = static_cast<double>(m.head_dim), kv = static_cast<double>(m.kv_heads);
    column(h, gathered, (a + 2 * kv) * d / tp, 3);  // wq, wk, wv
    row(a * d / tp);
  }
  const double n_up = m.gated ? 2 : 1;
  if (ffn == FfnKind::dense) {
    const double f = static_cast<double>(m.ffn);
    column(h, gathered, n_up * f / tp, n_up);  // w1 (and w3)
    row(f / tp);
  } else {
    if (m.shared_experts > 0) {
      const double fs = static_cast<double>(m.shared_experts * m.shared_expert_ffn);
      column(h, gathered, n_up * fs / tp, n_up);
      row(fs / tp);
    }
    // Routed experts: the rank's share of the dispatched tokens (k·ρ_e per token over the expert
    // grid, as the elementwise census counts them), each expert's weights once.
    const double routed = routed_rows_per_token(m, s, rho), fe = static_cast<double>(m.expert_ffn);
    const double local_experts = static_cast<double>(m.experts) / static_cast<double>(s.ep);
    const double etp = static_cast<double>(s.etp);
    inputs += routed * (h + fe);
    grads += routed * (n_up * fe + h);
    weights += local_experts * (n_up + 1) * h * fe / etp;
  }
  // The roofline counts the kernels torch.compile makes; eager runs each op of a cast (abs, amax,
  // scale, clamp, convert) as its own kernel, priced with the profile's eager/compiled ratio of
  // HBM passes (as the elementwise census is).
  const RunOptions& o = run.options;
  const double eager = o.torch_compile || run.profile.compiled_elementwise_passes <= 0
                           ? 1
                           : run.profile.eager_elementwise_passes / run.profile.compiled_elementwise_passes;
  bytes.forward = (M * inputs * r.input.forward + weights * r.weight.forward) * eager;
  bytes.backward =
      (M * inputs * r.input.backward + M * grads * r.grad_output.backward + weights * r.weight.backward) * eager;
  return bytes;
}

}  // namespace meshfit
