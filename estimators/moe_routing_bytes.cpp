#include "estimators/moe_routing_bytes.hpp"

#include "estimators/layer_flops.hpp"

namespace meshfit {

double megatron_clamp_bytes_per_row(const Model& m) {
  return m.clamped_swiglu ? 16 * static_cast<double>(m.expert_ffn) : 0;
}

namespace {

// Megatron-Core's MoE layer, counted kernel by kernel from its code (Megatron-LM @d98e8a64dd,
// megatron/core/transformer/moe/: router.py, moe_utils.py, token_dispatcher.py, experts.py) and
// Transformer Engine's (@d0067d0da: pytorch/router.py, pytorch/permutation.py,
// common/triton/permutation.py, module/grouped_linear.py, the quantizers), as the minimum bytes each
// kernel reads and writes, per token of the layer's input (a rank's 1/σ of the sequence) and per
// routed row it holds (k·ρ/tp of them per sequence token), with bf16 activations:
//  - the router: its GEMM reads the input (h·β_a) and writes fp32 scores; forced balancing, the
//    fused top-k and its saved copies: 47·E + 52·k bytes forward, 25·E + 48·k backward (fp32
//    scores and probabilities, int32 and bool maps), its backward's fp32 input gradient 20·h;
//  - the all-to-all dispatcher: the fused permute reads each token once and writes its k rows,
//    the received rows are sorted by local expert and back (read and write), and unpermute reads
//    the rows and writes the token: 3·h·β_a + 6·k·h·β_a each way (the all-to-all's own send and
//    receive buffers move at the link's pace and are priced as communication, §7.5);
//  - HybridEP's flex dispatcher permutes inside its dispatch kernels: 2·k·h·β_a of rows each way,
//    and (2·EP + 5)·E bytes of routing metadata forward, 4·E backward;
//  - the backward's gradient adds: 15·h·β_a per token in all (the router's fp32 input gradient,
//    the two gradients of the layer input added, permute and unpermute's token-side halves).
// The expert activation (SwiGLU) is elementwise traffic already (layer_time.cpp).
MoeRoutingBytes megatron_routing(const Model& m, const Run& run, const Strategy& s, double rho) {
  MoeRoutingBytes b;
  const double ba = run.options.beta_a, h = static_cast<double>(m.hidden);
  const double E = static_cast<double>(m.experts), k = static_cast<double>(m.top_k);
  const double f = static_cast<double>(m.expert_ffn), n_up = m.gated ? 2 : 1;
  const double tokens = 1 / static_cast<double>(s.sigma());  // the layer's input tokens on this rank
  const double rows = routed_rows_per_token(m, s, rho);
  const bool flex = sends_once_per_node(run.options.ep_dispatch) && s.ep > 1;
  const double ep = static_cast<double>(s.ep);
  // Router and token-side permute/unpermute.
  b.forward = tokens * (3 * h * ba + 52 * k + (flex ? (35 + 2 * ep) * E : 47 * E));
  b.backward = tokens * (15 * h * ba + 48 * k + (flex ? 12 * E : 25 * E));
  // Row-side permutation: the all-to-all dispatcher writes, sorts and unsorts and reads each row
  // (6·h·β_a); HybridEP writes and reads it once (2·h·β_a).
  const double row_bytes = (flex ? 2 : 6) * h * ba;
  b.forward += rows * row_bytes;
  b.backward += rows * row_bytes;
  // Transformer Engine's fused grouped MLP (RunOptions::te_fused_grouped_mlp) keeps the bias, the
  // clamps and FC2's input quantisation in its GEMMs' epilogues: none of the three below.
  const bool fused_mlp = run.options.te_fused_grouped_mlp;
  // Megatron's expert biases (gpt-oss): FC2's bias goes through the per-expert fp32 path
  // (experts.py: t + b·p per expert, a cat and a cast), 28·h bytes per row forward, 40·h backward.
  if (m.mlp_bias && !fused_mlp) {
    b.forward += rows * 28 * h;
    b.backward += rows * 40 * h;
  }
  // gpt-oss's clamped activation: two eager clamps and a cat before the compiled kernel
  // (fused_bias_geglu.py), 16·f bytes per row forward beyond the activation's own, 18·f backward.
  if (m.clamped_swiglu && !fused_mlp) {
    b.forward += rows * megatron_clamp_bytes_per_row(m);
    b.backward += rows * 18 * f;
  }
  // FP8 grouped GEMMs quantise each expert's split of their operands in kernels of their own
  // (Transformer Engine's split quantisation; its norms cannot absorb them as they do a dense
  // layer's): current scaling an amax pass, then a cast with its transpose, 6 bytes per element
  // (quantizer.cpp, cast.cpp); MXFP8 one pass, 2 + 2·1 + 2/32 = 4.06 bytes. Forward: FC1's input
  // (h) and FC2's (f); backward: FC2's output gradient (h) and FC1's (n_up·f). The all-to-all
  // path also pads each expert's rows to the FP8 GEMM's multiple and unpads them, 8·h per row
  // each way (experts.py, fp8_utils.py); HybridEP pads inside its dispatch.
  if (run.options.fp8_linears) {
    const double per = run.options.fp8_scaling == Fp8Scaling::mxfp8 ? 4 + 2.0 / 32 : 6;
    const double pad = flex ? 0 : 8 * h;
    // Under the fused grouped MLP FC2's input and FC1's output gradient come out of GEMM
    // epilogues already quantised: FC1's input and FC2's output gradient remain.
    const double f_side = fused_mlp ? 0 : 1;
    b.forward += rows * (per * (h + f_side * f) + pad);
    b.backward += rows * (per * (h + f_side * n_up * f) + pad);
  }
  return b;
}

// gpt-oss's experts under eager torchtitan (models/gpt_oss/moe.py at a4ca5a486, 2026-02-24:
// _run_experts_grouped_mm and swiglu), per routed row, beyond the plain activation (read 2·f,
// write f) the elementwise ops price. In elements of β_a bytes:
//  - the biases: each repeated to its rows (repeat_interleave) and added, FC1's 2·f wide and FC2's
//    h: 2f + (4f + 2f) and h + (2h + h) forward; backward, repeat_interleave's sums read each
//    bias gradient once, 2f + h;
//  - the clamped SwiGLU as seven kernels: the two clamps on the strided halves (read f, write f
//    each), α·g, σ, g·σ (read 2f), l + 1 and (g·σ)·(l + 1) (read 2f): 9f read and 7f written, 13f
//    beyond the plain activation's 3f. Backward, autograd's: the product's two gradients (3f
//    each), g·σ's two (3f each), σ's (3f), α's (2f) and the add of g's two gradients (3f), the
//    clamps' masked gradients (3f each), each strided slice's backward into zeros of 2f (4f each)
//    and the add of the two (6f): 40f, 34f beyond the plain activation's 6f.
// Compiled, Inductor fuses all of it into the activation's own kernel (torchtitan_routing's
// compiled branch adds none).
MoeRoutingBytes torchtitan_expert_extras(const Model& m, const Run& run) {
  MoeRoutingBytes x;
  const double ba = run.options.beta_a, h = static_cast<double>(m.hidden), f = static_cast<double>(m.expert_ffn);
  if (m.mlp_bias) {
    x.forward += ba * (8 * f + 4 * h);
    x.backward += ba * (2 * f + h);
  }
  if (m.clamped_swiglu) {
    x.forward += ba * 13 * f;
    x.backward += ba * 34 * f;
  }
  return x;
}

// torchtitan's MoE layer (torchtitan @b5bcd76c6: models/common/moe.py, token_dispatcher.py,
// ops/scatter_add.py, distributed/activation_checkpoint.py), counted the same way, per token of
// the layer's input and per routed row, bf16:
//  - eager forward: the router in fp32 (a cast, softmax or sigmoid, the expert bias, top-k:
//    16·h + 22·E per token with the zero-fill of the combine), the tokens sorted by expert (a
//    stable int64 argsort, about 650 bytes of index traffic per row with the rest of the index
//    arithmetic), the gather into expert order, _permute's gather, _unpermute's index_put, the
//    scores applied in fp32 (three kernels) and the deterministic scatter-add: 34·h per row;
//  - eager backward: 60·h per row (the gathers' and index_puts' backward as zero-fill and
//    sort-based accumulation, the fp32 weighting's five kernels, the w1/w3 input-gradient add),
//    18·h + 16·E per token, 550 bytes of index traffic per row;
//  - compiled: Inductor fuses the weighting and the index arithmetic (the sort and the
//    scatter-add stay aten and custom ops): 18·h per row forward and 20·h backward, 16·h + 18·E
//    and 12·h + 16·E per token, 500 and 100 bytes of indices per row;
//  - per-op SAC reruns in the backward: eager, the whole MoE forward but the saved top-k (its 4·E);
//    compiled, the re-gather from the saved all-to-all output (4·h per row), the argsort and the
//    router (6·h + 8·E per token, 300 bytes per row).
MoeRoutingBytes torchtitan_routing(const Model& m, const Run& run, const Strategy& s, double rho) {
  MoeRoutingBytes b;
  const double h = static_cast<double>(m.hidden), E = static_cast<double>(m.experts);
  const double tokens = 1 / static_cast<double>(s.sigma());
  const double rows = routed_rows_per_token(m, s, rho);
  if (run.options.torch_compile) {
    b.forward = rows * (18 * h + 500) + tokens * (16 * h + 18 * E);
    b.backward = rows * (20 * h + 100) + tokens * (12 * h + 16 * E);
    b.sac_recompute = rows * (4 * h + 300) + tokens * (6 * h + 8 * E);
  } else {
    b.forward = rows * (34 * h + 650) + tokens * (16 * h + 22 * E);
    b.backward = rows * (60 * h + 550) + tokens * (18 * h + 16 * E);
    const MoeRoutingBytes extras = torchtitan_expert_extras(m, run);
    b.forward += rows * extras.forward;
    b.backward += rows * extras.backward;
    b.sac_recompute = b.forward - tokens * 4 * E;
  }
  return b;
}

}  // namespace

MoeRoutingBytes moe_routing_bytes(const Model& m, const Run& run, const Strategy& s, double rho) {
  if (!m.is_moe()) return {};
  switch (run.profile.moe_routing) {
    case MoeRouting::megatron: return megatron_routing(m, run, s, rho);
    case MoeRouting::torchtitan: return torchtitan_routing(m, run, s, rho);
    case MoeRouting::none: break;
  }
  return {};
}

}  // namespace meshfit
