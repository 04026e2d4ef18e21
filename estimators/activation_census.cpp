#include "estimators/activation_census.hpp"

#include <algorithm>
#include <array>

#include "estimators/sapp_nd_attention.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

double Census::saved_total() const {
  double t = 0;
  for (double v : saved) t += v;
  return t;
}

double Census::saved_tp_total() const {
  double t = 0;
  for (double v : saved_tp) t += v;
  return t;
}

bool op_kept(Op op, const RecomputeSwitches& sw) {
  switch (op) {
    case Op::attBMM: return sw.attBMM;
    case Op::attUp: return sw.attUp;
    case Op::softmax: return sw.softmax;
    case Op::dropout: return sw.dropout;
    case Op::headCast: return sw.headCast;
    case Op::normOp: return sw.normOp;
    case Op::gather: return sw.gather;
    case Op::ffAct: return sw.ffAct;
    default: return true;  // attMM, ffMM, linrec, other have no switch
  }
}

bool attention_dropout(const Model& m, const Run& run) {
  return run.options.attention_dropout.value_or(m.attention_dropout);
}
bool hidden_dropout(const Model& m, const Run& run) { return run.options.hidden_dropout.value_or(m.hidden_dropout); }
bool embedding_dropout(const Model& m, const Run& run) {
  return run.options.embedding_dropout.value_or(m.embedding_dropout);
}

std::int64_t ulysses_degree(const Strategy& s) {
  switch (s.cp_algo) {
    case CpAlgo::ulysses: return s.cp;
    case CpAlgo::hybrid: return s.cp_u;
    default: return 1;
  }
}

std::int64_t replicated_kv_heads(const Model& m, const Strategy& s) {
  return std::max(m.kv_heads, s.tp * ulysses_degree(s));
}

std::int64_t attended_kv_heads(const Model& m, const Run& run, const Strategy& s) {
  return run.options.repeat_kv_heads ? m.heads : replicated_kv_heads(m, s);
}

namespace {

// §7.4.7: with fp8_saved_matmul_inputs the inputs of linear layers are kept in 1 byte.
double linear_input_bytes(const Run& run) { return run.options.fp8_saved_matmul_inputs ? 1.0 : run.options.beta_a; }

// Elements per token (× tp) of the fused QKV projection's output that a checkpoint of core
// attention keeps beyond the value heads, where the uncheckpointed attention would have let them
// go. Megatron-Core splits the output into views (attention.py, get_query_key_value_tensors);
// rotary embeddings or QK norms make query and key new tensors, and grouped heads make the query
// a copy (its reshape cannot view the group-interleaved layout). Transformer Engine's attention
// then finds no packed q/k/v layout and attends on contiguous copies, which are what it saves
// (dot_product_attention/utils.py, get_qkv_layout: "not_supported" → x.contiguous()), so the
// output dies; Megatron's checkpoint instead saves the value view it was passed, and with it the
// whole output: each rank's query groups (one whole group when there are fewer groups than TP
// ranks) of a/g query heads and one key head more. Multi-head attention without rotary
// embeddings or QK norms passes three views TE reads in place (sbh3d): nothing is kept beyond them.
double qkv_output_beyond_value(const Model& m, const Strategy& s) {
  const double a = static_cast<double>(m.heads), g = static_cast<double>(m.kv_heads);
  const bool views_read_in_place = m.heads == m.kv_heads && m.positions > 0 && !m.qk_norm;
  if (views_read_in_place) return 0;
  const double groups = static_cast<double>(replicated_kv_heads(m, s));  // per rank × tp
  return groups * (a / g + 1) * static_cast<double>(m.head_dim);
}

// §7.4.1 / §7.4.2: the attention block. Returns W_att.
double own_attention_block(const Model& m, const Run& run, const Strategy& s, Census& c) {
  const RunOptions& o = run.options;
  const double lin = linear_input_bytes(run);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double seq = static_cast<double>(run.seq);
  const bool flash = run.flash_attention;
  const bool att_drop = attention_dropout(m, run);
  auto scores = [&]() {  // materialised attention: softmax output, dropout, cast copy
    c.add(Op::softmax, true, o.beta_sm * a * seq);
    if (att_drop) c.add(Op::softmax, true, (1 + o.beta_a) * a * seq);
    if (o.softmax_cast) c.add(Op::headCast, true, o.beta_a * a * seq);
  };
  if (m.attention == AttentionKind::mla) {
    const double rq = static_cast<double>(m.q_lora_rank), rkv = static_cast<double>(m.kv_lora_rank);
    const double dqk = static_cast<double>(m.qk_nope_dim + m.qk_rope_dim);
    const double dv = static_cast<double>(m.v_head_dim);
    c.add(Op::normOp, false, o.beta_n * h + o.beta_a * rq + o.beta_a * rkv);
    c.add(Op::attMM, false, lin * h + lin * rq + lin * rkv);
    c.add(Op::attUp, true, o.beta_a * (a * dqk + a * dqk + a * dv));
    if (flash) {
      c.add(Op::softmax, true, o.beta_lse * a);
    } else {
      scores();
    }
    c.add(Op::attMM, true, lin * a * dv);
    return flash ? o.beta_a * (2 * a * dqk + a * dv) + 4 * a * dqk + 4 * a
                 : o.beta_a * (2 * a * dqk + a * dv) + 2 * o.beta_sm * a * seq;
  }
  const double dh = static_cast<double>(m.head_dim);
  const double kv = static_cast<double>(attended_kv_heads(m, run, s));
  c.add(Op::normOp, false, o.beta_n * h);
  c.add(Op::attMM, false, lin * h);
  if (flash) {
    c.add(Op::attBMM, true, o.beta_a * (a * dh + 2 * kv * dh));
    c.add(Op::softmax, true, o.beta_lse * a);
    // Flash attention keeps its output O for its backward. It is the output projection's input
    // too, counted once below, unless that projection keeps its own FP8 copy (Transformer
    // Engine's linears: linear.py saves the cast input; backends.py FusedAttnFunc saves O).
    if (lin != o.beta_a) c.add(Op::attBMM, true, o.beta_a * a * dh);
  } else {
    c.add(Op::attBMM, true, o.beta_a * 3 * a * dh);  // eager GQA expands K and V to a heads
    scores();
  }
  c.add(Op::attMM, true, lin * a * dh);
  if (flash && run.profile.attention_checkpoint_keeps_qkv_output) {
    c.core_attn_checkpoint_tp = o.beta_a * qkv_output_beyond_value(m, s);
  }
  if (m.norms_per_layer == 4) c.add(Op::normOp, false, o.beta_n * h);  // Gemma's post-attention norm input
  if (m.qk_norm) c.add(Op::normOp, true, o.beta_a * (a + kv) * dh);
  if (o.eager_rope) c.add(Op::other, true, o.beta_a * (a + kv) * dh);
  return flash ? o.beta_a * (a * dh + 2 * kv * dh) + 4 * a * dh + 4 * a
               : o.beta_a * 3 * a * dh + 2 * o.beta_sm * a * seq;
}

// The attention block: its own ops, or under §17.5.3 SAPP-ND's with the block's norms. W_att stays.
double attention_block(const Model& m, const Run& run, const Strategy& s, Census& c) {
  Census own;
  const double w_att = own_attention_block(m, run, s, own);
  const bool seed = seed_rule(run, SeedConvention::seed_attention);
  for (std::size_t op = 0; op < kOpCount; ++op) {
    if (seed && op != static_cast<std::size_t>(Op::normOp)) continue;
    c.saved[op] += own.saved[op];
    c.saved_tp[op] += own.saved_tp[op];
  }
  if (seed) {
    sapp_nd::add_attention(m, run, s, c);
  } else {
    c.core_attn_checkpoint_tp = own.core_attn_checkpoint_tp;
  }
  return w_att;
}

// What the FFN keeps of its input: its norm's input and the normed input the first matrices read;
// Gemma's post-FFN norm keeps the FFN output too. A parallel block (Cohere 2: attention and FFN
// read one normed input) keeps nothing more: autograd saves that tensor once, with attention.
void ffn_input(const Model& m, const Run& run, FfnKind ffn, Census& c) {
  const double h = static_cast<double>(m.hidden);
  if (m.norms_per_layer == 4) c.add(Op::normOp, false, run.options.beta_n * h);
  if (m.norms_per_layer == 1) return;
  c.add(Op::normOp, false, run.options.beta_n * h);  // the MLP's checkpointed input
  if (ffn == FfnKind::dense) {
    c.add_mlp(Op::ffMM, false, linear_input_bytes(run) * h);
  } else {
    c.add(Op::ffMM, false, linear_input_bytes(run) * h);
  }
}

// Whether the gated FFN's activation keeps one tensor (a fused SwiGLU kernel, or torch.compile's
// fusion) or three (eager silu(w1·x) · w3·x: the silu output and both product inputs).
bool swiglu_fused(const Run& run) { return run.options.fused_swiglu || run.options.torch_compile; }

// §7.4.3: dense FFN. Returns W_mlp.
double dense_block(const Model& m, const Run& run, Census& c) {
  const RunOptions& o = run.options;
  const double f = static_cast<double>(m.ffn);
  const double n_up = m.gated ? 2 : 1;
  const double lin = linear_input_bytes(run);
  ffn_input(m, run, FfnKind::dense, c);
  c.add_mlp(Op::ffMM, true, o.beta_a * n_up * f);
  c.add_mlp(Op::ffAct, true, lin * f);
  if (m.gated && !swiglu_fused(run)) c.add_mlp(Op::other, true, o.beta_a * f);
  return o.beta_a * (n_up + 1) * f;
}

// §7.4.5: MoE FFN. Returns W_mlp.
double moe_block(const Model& m, const Run& run, const Strategy& s, Census& c) {
  const RunOptions& o = run.options;
  const double h = static_cast<double>(m.hidden), fe = static_cast<double>(m.expert_ffn);
  const double fsh = static_cast<double>(m.shared_experts * m.shared_expert_ffn);
  const double E = static_cast<double>(m.experts), k = static_cast<double>(m.top_k);
  const double n_up = m.gated ? 2 : 1;
  const double rho = routed_load_factor(o);
  const double n_asg = k * rho;
  const double lin = linear_input_bytes(run);
  ffn_input(m, run, FfnKind::moe, c);
  c.add(Op::ffMM, false, o.beta_a * (2 * E + k) + o.beta_a * h);  // router slot + combined output
  c.add(Op::ffMM, true, n_asg * (lin * h * static_cast<double>(s.etp) + o.beta_a * n_up * fe) + o.beta_a * n_up * fsh);
  c.add(Op::ffAct, true, n_asg * lin * fe + lin * fsh);
  c.moe_act_tp += n_asg * lin * fe;  // the routed experts' share (Megatron's moe_act reruns it)
  if (m.gated && !swiglu_fused(run)) c.add(Op::other, true, n_asg * o.beta_a * fe + o.beta_a * fsh);
  // gpt-oss's clamped SwiGLU as eager ops (torchtitan models/gpt_oss/moe.py, swiglu: clamp the gate
  // and linear halves, out = g·σ(α·g), then out + out·l): the clamps keep their input, the biased up
  // projection counted above, and autograd saves σ's output, the clamped gate beside it, their
  // product and the clamped linear half: four tensors of f_e per routed row where the plain SwiGLU
  // keeps one (its silu output), so three more.
  if (m.clamped_swiglu && !swiglu_fused(run)) c.add(Op::other, true, 3 * n_asg * o.beta_a * fe);
  // torchtitan's eager combine casts each routed row back in fp32 before the weighted sum
  // (token_dispatcher.py), a copy autograd keeps: 4 bytes per element, k rows (FrameworkProfile).
  if (run.profile.moe_fp32_combine && !run.options.torch_compile) c.add(Op::other, false, 4 * k * h);
  return n_asg * o.beta_a * (n_up + 1) * fe + o.beta_a * (n_up + 1) * fsh;
}

}  // namespace

// torchtitan's "op" selective AC (torchtitan/distributed/activation_checkpoint.py, _apply_op_sac:
// its save list and the every-second-mm rule): the matmuls of a checkpointed region are counted in
// call order and the odd-numbered ones are saved, with the attention kernel's output and
// log-sum-exp and the outputs of reduce-scatters and all-to-alls; the region's input is the
// checkpoint's own. Per layer the matmuls run:
//  - GQA attention: wq, wk, wv, wo (models/llama3/model.py): wq and wv saved;
//  - MLA attention (models/deepseek_v3/model.py): wq, wkv_a, wkv_b, wo, or with a query latent
//    wq_a, wq_b, wkv_a, wkv_b, wo. Under TP the latent projections wq_a and wkv_a are replicated
//    (NoParallel in its parallelize.py), so their outputs are whole on every rank, and wo's is its
//    partial sum before the reduce-scatter;
//  - a dense FFN: w1, w3, w2; an MoE layer: the router's gate (forced to recompute, not counted),
//    the routed experts as grouped GEMMs (torch._grouped_mm: not an mm, recomputed), then the
//    shared expert's w1, w3, w2. Kept besides: topk's fp32 scores and int64 indices (12 bytes per
//    routed slot) and, with expert parallelism, the all-to-all outputs of dispatch (k·ρ rows
//    received) and combine (k rows).
// With FlexAttention and the model not compiled, torchtitan from #1683 (September 2025) to #2118
// (December 2025) wrapped only the FFN or MoE in op SAC and the attention in full AC
// (_apply_op_sac_to_transformer_block_with_flex; RunOptions::sac_attention_full_ac): the attention
// keeps only its input, the two norms outside either region keep their inputs and fp32 rstd, and
// the FFN's count starts afresh.
//
// Eager, SAC stores every must-save op's output until the backward, read or not
// (torch/utils/checkpoint.py, _CachingTorchDispatchMode). Under torch.compile the must-save tag
// only bans recomputing the op, and the min-cut partitioner keeps what the backward reaches
// (torch/_functorch/partitioners.py, should_ban_recomputation, solve_min_cut): nothing reads the
// FFN's output — w2's, its TP partial sum and its reduce-scatter — since w2's backward needs its
// input and the residual add none of its operands. wo's reduce-scatter output is still kept: the
// FFN norm's input is recomputed from it.
namespace {

// Where a saved matmul output lives: split over TP ranks, whole on each (a replicated or a
// row-parallel matmul under TP), or the layer's width h on the SP shard.
enum class Placement : std::uint8_t { tp_split, unsplit, residual };
struct SacMatmul {
  double width;
  Placement placement;
};

// The attention's matmuls in call order (at most five; a fixed array: the search scores without
// allocating, tests/scoring_allocations.cpp).
struct SacMatmuls {
  std::array<SacMatmul, 5> mm{};
  std::size_t count = 0;
  void push(double width, Placement placement) { mm[count++] = {width, placement}; }
};

SacMatmuls attention_matmuls(const Model& m, const Strategy& s) {
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const Placement out = s.tp > 1 ? Placement::unsplit : Placement::residual;  // wo
  SacMatmuls list;
  if (m.attention == AttentionKind::gqa) {
    const double dh = static_cast<double>(m.head_dim), kv = static_cast<double>(replicated_kv_heads(m, s));
    list.push(a * dh, Placement::tp_split);   // wq
    list.push(kv * dh, Placement::tp_split);  // wk
    list.push(kv * dh, Placement::tp_split);  // wv
    list.push(h, out);                        // wo
    return list;
  }
  const double d_qk = static_cast<double>(m.qk_head_dim());
  const double d_kv = static_cast<double>(m.qk_nope_dim + m.v_head_dim);
  const double latent = static_cast<double>(m.kv_lora_rank + m.qk_rope_dim);
  const Placement replicated = s.tp > 1 ? Placement::unsplit : Placement::residual;
  if (m.q_lora_rank > 0) list.push(static_cast<double>(m.q_lora_rank), replicated);  // wq_a
  list.push(a * d_qk, Placement::tp_split);                                          // wq or wq_b
  list.push(latent, replicated);                                                     // wkv_a
  list.push(a * d_kv, Placement::tp_split);                                          // wkv_b
  list.push(h, out);                                                                 // wo
  return list;
}

}  // namespace

void torchtitan_sac(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, Census& c) {
  if (m.attention != AttentionKind::gqa && m.attention != AttentionKind::mla) return;
  const RunOptions& o = run.options;
  const double b = o.beta_a, h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double v_width = a * static_cast<double>(m.attention == AttentionKind::mla ? m.v_head_dim : m.head_dim);
  c.sac_saved = 0;
  c.sac_saved_tp = 0;
  c.sac_unsplit = 0;
  const auto keep = [&](const SacMatmul& mm) {
    const double bytes = b * mm.width;
    if (mm.placement == Placement::tp_split) c.sac_saved_tp += bytes;
    if (mm.placement == Placement::unsplit) c.sac_unsplit += bytes;
    if (mm.placement == Placement::residual) c.sac_saved += bytes;
  };
  int count = 0;  // matmuls so far in the current region
  if (o.sac_attention_full_ac) {
    // The attention's checkpoint keeps its input (the attention norm's output); each norm keeps
    // its input and fp32 rstd; the FFN's checkpoint keeps its input (the FFN norm's output).
    c.sac_saved = 2 * b * h + 2 * (b * h + 4);
  } else {
    c.sac_saved = b * h;  // the block input
    const SacMatmuls attention = attention_matmuls(m, s);
    for (std::size_t i = 0; i < attention.count; ++i) {
      if (++count % 2 == 1) keep(attention.mm[i]);
    }
    if (o.sac_saves_attention) c.sac_saved_tp += b * v_width + o.beta_lse * a;  // output, log-sum-exp
    // wo's reduce-scatter output: torchtitan's save list holds reduce_scatter_tensor, which only SP
    // runs; plain TP's all-reduce is not on it, so its output is recomputed (re-communicated).
    if (s.tp > 1 && s.sp) c.sac_saved += b * h;
  }
  // The FFN's (or shared expert's) w1, w3, w2: w2's output is not kept under torch.compile, whose
  // backward never reads it; under TP it is the partial sum before its reduce-scatter, whose
  // output is kept too (with SP; plain TP's all-reduce output is recomputed, as wo's).
  const bool ffn_output_kept = !o.torch_compile;
  const auto ffn_matmuls = [&](double f) {
    if (++count % 2 == 1) keep({f, Placement::tp_split});  // w1
    if (++count % 2 == 1) keep({f, Placement::tp_split});  // w3
    if (++count % 2 == 1 && ffn_output_kept) {             // w2
      keep({h, s.tp > 1 ? Placement::unsplit : Placement::residual});
      if (s.tp > 1 && s.sp) c.sac_saved += b * h;
    }
  };
  if (ffn == FfnKind::dense) {
    ffn_matmuls(static_cast<double>(m.ffn));
    return;
  }
  const double k = static_cast<double>(m.top_k);
  const double rho = routed_load_factor(o);
  c.sac_saved += 12 * k;                               // topk: fp32 scores, int64 indices
  if (s.ep > 1) c.sac_saved += b * h * k * (rho + 1);  // dispatch and combine all-to-all outputs
  const double fsh = static_cast<double>(m.shared_experts * m.shared_expert_ffn);
  if (fsh > 0) ffn_matmuls(fsh);
}

Census analytic_census(const Model& m, const Run& run, const Strategy& s, FfnKind ffn) {
  Census c;
  torchtitan_sac(m, run, s, ffn, c);
  c.w_att = attention_block(m, run, s, c);
  c.w_mlp = ffn == FfnKind::moe ? moe_block(m, run, s, c) : dense_block(m, run, c);
  if (hidden_dropout(m, run)) c.add(Op::dropout, false, 2 * static_cast<double>(m.hidden));  // §7.4.4
  // §7.4.6: gradients of the layer output and input; the larger backward workspace.
  c.working = c.saved_total() + 2 * run.options.beta_a * static_cast<double>(m.hidden);
  c.working_tp = c.saved_tp_total() + std::max(c.w_att, c.w_mlp);
  return c;
}

double gathered_kv_bytes(const Model& m, const Run& run, const Strategy& s) {
  if (s.cp <= 1) return 0;
  const std::int64_t kv_shards = s.cp_algo == CpAlgo::ulysses ? s.cp : s.cp_algo == CpAlgo::hybrid ? s.cp_u : 1;
  const std::int64_t gathered = s.cp / kv_shards;
  if (gathered <= 1) return 0;
  double width;  // width_K + width_V
  if (m.attention == AttentionKind::mla) {
    width = static_cast<double>(m.heads * (m.qk_nope_dim + m.qk_rope_dim) + m.heads * m.v_head_dim);
  } else {
    width = 2.0 * static_cast<double>(attended_kv_heads(m, run, s) * m.head_dim);
  }
  return static_cast<double>(gathered - 1) * run.options.beta_a * width / static_cast<double>(s.tp);
}

}  // namespace meshfit
