#include "estimators/layer_time.hpp"

#include <algorithm>

#include "estimators/attention_head_width.hpp"
#include "estimators/attention_tiles.hpp"
#include "estimators/collectives.hpp"
#include "estimators/expert_node_spread.hpp"
#include "estimators/fp8_casts.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/moe_host_issue.hpp"
#include "estimators/moe_routing_bytes.hpp"
#include "estimators/rank_layout.hpp"
#include "estimators/rotary_kernels.hpp"

namespace meshfit {

double kernel_time(const Device& d, double eta_fw, double F) {
  if (F <= 0) return 0;
  const double eta = d.eta_max * eta_fw;
  return F / (eta * d.peak_flops) + d.kernel_overhead / eta;
}

KernelScales kernel_scales(const Run& run, const Device& d, const Strategy& s) {
  const FrameworkProfile& p = run.profile;
  const double base = p.eta_fw_on(d.generation);
  KernelScales k;
  k.other = base;
  // The profile's speedups hold on Hopper, where they were fitted; a device whose fp8 matmuls gain
  // more (or less) over its bf16 ones scales them by the ratio of the two gains (device.hpp).
  const double fp8 = (run.options.fp8_scaling == Fp8Scaling::rowwise ? p.fp8_rowwise_gemm_speedup
                      : run.options.fp8_scaling == Fp8Scaling::mxfp8 ? p.fp8_mxfp8_gemm_speedup
                                                                     : p.fp8_gemm_speedup) *
                     d.fp8_matmul_ratio / kHopperFp8MatmulRatio;
  k.linear = base * (run.options.fp8_linears ? fp8 : 1.0);
  k.core = base * p.eta_core * (s.cp > 1 ? p.cp_core_scale : 1.0);
  return k;
}

double expert_gemm_bytes(const Model& m, const Run& run, const Strategy& s, bool up, double rho) {
  const double h = static_cast<double>(m.hidden), fe = static_cast<double>(m.expert_ffn);
  const double width = up ? (m.gated ? 2.0 : 1.0) * fe : fe;
  const double local = static_cast<double>(m.experts) / static_cast<double>(s.ep * s.etp);
  const double beta_w = run.options.fp8_linears ? 1.0 : run.precision.beta_P;
  const double rows = static_cast<double>(s.micro_batch) * static_cast<double>(run.seq) / static_cast<double>(s.cp) *
                      routed_rows_per_token(m, s, rho);
  return local * h * width * beta_w + rows * (h + width) * run.options.beta_a;
}

namespace {

// Bytes per token of a layer's two norms on one device (read and write h each, over the SP shard).
double norm_bytes(const Model& m, const Run& run, const Strategy& s) {
  return 2 * 2 * static_cast<double>(m.hidden) * run.options.beta_a / static_cast<double>(s.sigma());
}

// Bytes per token of an MoE layer's routed-expert activation on one device (read n_up·f_e, write
// f_e per routed row).
double expert_activation_bytes(const Model& m, const Run& run, const Strategy& s, double rho) {
  const double n_up = m.gated ? 2 : 1;
  return (n_up + 1) * routed_rows_per_token(m, s, rho) * static_cast<double>(m.expert_ffn) * run.options.beta_a;
}

// Bytes per token of the elementwise ops of a layer on one device: two norms (read and write h),
// two residual adds (read 2h, write h) over the SP shard, rotary on q and k, and the activation
// (read n_up·f, write f) over the TP shard.
double elementwise_bytes(const Model& m, const Run& run, const Strategy& s, FfnKind ffn, double rho) {
  const double ba = run.options.beta_a, h = static_cast<double>(m.hidden);
  const double sigma = static_cast<double>(s.sigma()), tp = static_cast<double>(s.tp);
  const double n_up = m.gated ? 2 : 1;
  double bytes = norm_bytes(m, run, s) + 2 * 3 * h * ba / sigma;
  bytes += 2 * rotated_elements_per_token(m, s) * ba;
  if (ffn == FfnKind::dense) {
    bytes += (n_up + 1) * static_cast<double>(m.ffn) * ba / tp;
  } else {
    const double fsh = static_cast<double>(m.shared_experts * m.shared_expert_ffn);
    // The routed experts' activation runs in a GEMM epilogue under the fused grouped MLP.
    const double routed = run.options.te_fused_grouped_mlp ? 0 : expert_activation_bytes(m, run, s, rho);
    bytes += routed + (n_up + 1) * fsh / tp * ba;
  }
  return bytes;
}

// The head width's scale of a fused attention core (attention_head_width.hpp); an unfused one's
// softmax is a kernel of its own, priced by its bytes, so its GEMMs keep the plain rate.
AttentionWidthScale core_width_scale(const Model& m, const Run& run, const Device& d) {
  return run.flash_attention ? attention_width_scale(m, d) : AttentionWidthScale{};
}

// ρ_core: backward/forward FLOP ratio of the attention core (§7.1).
double core_backward_ratio(const Run& run) { return run.flash_attention ? 2.5 : 2.0; }

// §7.2's selective recompute: what the layer's switch set recomputes.
bool runs_hyperparallel(const Run& run, const RecomputeSwitches& sw) {
  return run.options.selective_policy == SelectivePolicy::torchtitan_op_sac || sw == RecomputeSwitches::hyperparallel();
}

// §7.3: the layer's kernels, forward and backward (and its memory-bound elementwise ops), and
// what each recompute mode repeats (§7.2).
void compute_time(LayerTime& t, const Model& m, const Run& run, const Device& d, const Strategy& s, FfnKind ffn,
                  const LayerFlops& flops, double rho) {
  const RunOptions& o = run.options;
  const KernelScales eta = kernel_scales(run, d, s);
  const AttentionWidthScale width = core_width_scale(m, run, d);
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double shards = static_cast<double>(s.tp * s.cp);     // §7.3: every op split over tp·cp
  const double tokens = b * seq / static_cast<double>(s.cp);  // the micro-batch's, on this rank
  const double hbm = d.eta_hbm * d.hbm_bandwidth;             // memory-bound work's rate
  double att_proj_f = 0, ffn_proj_f = 0, up_f = 0, shared_f = 0;
  int routed_ops = 0, ffn_pair_ops = 0;
  bool after_core = false;
  for (std::size_t i = 0; i < flops.count; ++i) {
    const FlopOp& op = flops.ops[i];
    const bool core = op.role == OpRole::core;
    // Without flash attention the score GEMMs run over the whole s×s square and the causal mask
    // is applied after them (Megatron-Core dot_product_attention.py: torch.baddbmm over
    // [b·n_p, s_q, s_k], then FusedScaleMaskSoftmax masks), so they do 1/kCausalFactor (and
    // 1/window_share) times the FLOPs the model counts.
    const double ws = core ? window_share(m, seq) : 1;
    const double full_square = core && !run.flash_attention ? 1 / (kCausalFactor * ws) : 1;
    // A fused kernel on windowed or chunked layers visits whole key tiles and pays each query
    // tile's fixed cost: its time is tiled_core_share of the causal core's, not the window's share
    // of the FLOPs; under FP8 attention its backward visits every key tile up to the diagonal, the
    // causal core's (attention_tiles.hpp).
    const double tiled = core && run.flash_attention ? tiled_core_share(m, seq) / ws : 1;
    const double tiled_backward = core && run.flash_attention && o.fp8_attention ? 1 / ws : tiled;
    const double F = op.flops * full_square * tiled / shards;
    const double F_backward = op.flops * full_square * tiled_backward / shards;
    // The attention core's FLOPs take its head width's time.
    double f = kernel_time(d, core ? eta.core : eta.linear, core ? F * width.forward : F);
    if (ffn == FfnKind::moe && op.role == OpRole::ffn_proj) {
      // The routed experts' grouped GEMMs (up, then down): each also reads its experts' weights.
      f = std::max(f, expert_gemm_bytes(m, run, s, routed_ops++ == 0, rho) / hbm);
    }
    if (core) {
      // ... and the scores pass through HBM: the profile's bytes per score element, over the
      // rank's (a/tp)·(s/cp)·s elements per sequence (§7.3).
      const double scores =
          b * static_cast<double>(m.heads) / static_cast<double>(s.tp) * seq * seq / static_cast<double>(s.cp);
      const double score_f = run.flash_attention ? 0 : scores * run.profile.unfused_score_bytes_forward / hbm;
      const double score_b = run.flash_attention ? 0 : scores * run.profile.unfused_score_bytes_backward / hbm;
      f += score_f;
      t.core_forward = f;
      t.backward += kernel_time(d, eta.core, core_backward_ratio(run) * F_backward * width.backward) + score_b;
    }
    t.forward += f;
    if (!core) {
      t.backward += 2 * f;  // input gradient and weight gradient
      t.weight_grad += f;
    }
    if (op.role == OpRole::attention_proj || op.role == OpRole::attention_up) att_proj_f += f;
    if (op.role == OpRole::attention_up) up_f += f;
    if (op.role == OpRole::ffn_proj) ffn_proj_f += f;
    if (op.role == OpRole::shared_expert) shared_f += f;
    // Which SP collective each GEMM sits next to: the attention's projections before the core read
    // its all-gather, the one after it feeds its reduce-scatter; likewise the FFN's first and
    // second GEMM (a dense FFN's, or an MoE layer's shared expert: the routed experts move their
    // tokens over EP instead).
    if (core) after_core = true;
    if (op.role == OpRole::attention_proj || op.role == OpRole::attention_up) t.tp_pair_gemm[after_core ? 1 : 0] += f;
    if ((op.role == OpRole::ffn_proj && ffn == FfnKind::dense) || op.role == OpRole::shared_expert)
      t.tp_pair_gemm[ffn_pair_ops++ == 0 ? 2 : 3] += f;
  }

  if (ffn == FfnKind::moe) t.experts_forward = ffn_proj_f;  // the routed experts' grouped GEMMs

  // §7.3 option `elementwise`: memory-bound bytes of norms, rotary, activation and residual adds
  // (read and written once in forward, twice in backward), at the framework's HBM passes.
  const double passes =
      o.torch_compile ? run.profile.compiled_elementwise_passes : run.profile.eager_elementwise_passes;
  if (run.profile.elementwise) {
    const double t_e = elementwise_bytes(m, run, s, ffn, rho) * tokens * passes / hbm;
    t.forward += t_e;
    t.backward += 2 * t_e;
    // Megatron-Core's unfused rotary moves more than the one pass each way counted above.
    if (run.profile.framework == Framework::megatron && megatron_rotary_unfused(m, o)) {
      const RotaryPasses fused = megatron_rotary_passes(m, false), unfused = megatron_rotary_passes(m, true);
      const double rotated = rotated_elements_per_token(m, s) * o.beta_a * tokens * passes / hbm;
      t.forward += (unfused.forward - fused.forward) * rotated;
      t.backward += (unfused.backward - fused.backward) * rotated;
    }
  }

  // An MoE layer's token routing (moe_routing_bytes.hpp), memory-bound too.
  double routing_sac = 0;  // what torchtitan's per-op SAC reruns of it
  if (ffn == FfnKind::moe) {
    const MoeRoutingBytes routing = moe_routing_bytes(m, run, s, rho);
    t.forward += routing.forward * tokens / hbm;
    t.backward += routing.backward * tokens / hbm;
    routing_sac = routing.sac_recompute * tokens / hbm;
  }

  // Dynamic FP8 scaling's casts (fp8_casts.hpp), memory-bound like the elementwise ops.
  const Fp8CastBytes casts = fp8_cast_bytes(m, run, s, ffn, rho);
  t.forward += casts.forward / hbm;
  t.backward += casts.backward / hbm;

  // Recompute (§7.2): full repeats the forward; selective repeats what its switches drop.
  t.recompute[static_cast<int>(Recompute::full)] = t.forward;
  const int sel = static_cast<int>(Recompute::selective);
  const RecomputeSwitches sw = switches_for(run, s);
  const bool op_sac = run.options.selective_policy == SelectivePolicy::torchtitan_op_sac;
  if (op_sac && run.options.sac_attention_full_ac) {
    // torchtitan's FlexAttention split (activation_census.cpp): the attention under full AC reruns
    // its whole forward, the FFN or MoE as below.
    const double ffn_part = ffn == FfnKind::moe ? ffn_proj_f + 0.5 * shared_f + routing_sac : 0.5 * ffn_proj_f;
    t.recompute[sel] = att_proj_f + t.core_forward + ffn_part;
    t.recompute_repeats_cp[sel] = true;
  } else if (op_sac && ffn == FfnKind::moe) {
    // torchtitan's op SAC on an MoE layer: every other attention matmul, every routed expert's
    // grouped GEMM (not in its save list), every other shared-expert matmul (activation_census.cpp).
    t.recompute[sel] = 0.5 * att_proj_f + ffn_proj_f + 0.5 * shared_f + routing_sac;
  } else if (runs_hyperparallel(run, sw)) {
    t.recompute[sel] = 0.5 * att_proj_f + 0.5 * ffn_proj_f;  // every other matmul; core outputs saved
  } else {
    if (!sw.softmax || !sw.attBMM) {
      t.recompute[sel] += t.core_forward;
      t.recompute_repeats_cp[sel] = true;
    }
    if (!sw.attUp) t.recompute[sel] += up_f;
    if (!sw.dense_mlp && ffn == FfnKind::dense) t.recompute[sel] += ffn_proj_f;  // Megatron's `mlp` module
    // Megatron's `layernorm` and `moe_act` modules rerun memory-bound kernels only: the norms'
    // forward, and the routed experts' activation (with gpt-oss's clamps before it,
    // moe_routing_bytes.cpp), at the elementwise rate (transformer_layer.py, experts.py:
    // CheckpointWithoutOutput recomputes them in the backward).
    if (run.profile.elementwise) {
      double rerun = sw.normOp ? 0 : norm_bytes(m, run, s);
      if (ffn == FfnKind::moe && !sw.moe_act && !o.te_fused_grouped_mlp) {
        rerun += expert_activation_bytes(m, run, s, rho);
        rerun += routed_rows_per_token(m, s, rho) * megatron_clamp_bytes_per_row(m);
      }
      t.recompute[sel] += rerun * tokens * passes / hbm;
    }
  }
  // An attention kernel op SAC's save list misses is rerun (RunOptions::sac_saves_attention).
  if (op_sac && !run.options.sac_saves_attention && !run.options.sac_attention_full_ac) {
    t.recompute[sel] += t.core_forward;
    t.recompute_repeats_cp[sel] = true;
  }
  t.recompute_repeats_cp[static_cast<int>(Recompute::full)] = true;
}

// TP/SP (§7.5): activation buffers S_tp = n_cp·h·β_a.
void tp_time(LayerTime& t, const Model& m, const Run& run, const Device& d, const Strategy& s, FfnKind ffn) {
  const RunOptions& o = run.options;
  const double h = static_cast<double>(m.hidden), beta_a = o.beta_a;
  const double n_cp = static_cast<double>(s.micro_batch) * static_cast<double>(run.seq) / static_cast<double>(s.cp);
  const bool tree = o.latency_tree;
  if (s.tp > 1) {
    const Group tp = make_group(d, 1, s.tp, tree);
    const double S = n_cp * h * beta_a;
    // The layer's forward collectives, in the slots of LayerTime::tp_pair_gemm.
    double c[4] = {0, 0, 0, 0};
    if (s.sp) {
      // An all-gather before and a reduce-scatter after the attention, and again around a dense
      // FFN or a shared expert. Under FP8 linears with Transformer Engine, or torchao's float8 TP,
      // the all-gathers carry float8 (fp8_casts.hpp); the reduce-scatters stay bf16.
      const double S_ag = fp8_tp_all_gathers(run, s) ? n_cp * h : S;
      const bool ffn_pair = ffn == FfnKind::dense || m.shared_experts > 0;
      c[0] = all_gather(tp, S_ag);
      c[1] = reduce_scatter(tp, S);
      c[2] = ffn_pair ? all_gather(tp, S_ag) : 0;
      c[3] = ffn_pair ? reduce_scatter(tp, S) : 0;
    } else {
      c[1] = c[3] = all_reduce(tp, S);  // after the attention's and the FFN's output projections
    }
    const double tpd = static_cast<double>(s.tp);
    double e[4] = {0, 0, 0, 0};  // each collective's exposed time, after §7.6's ω_tp
    for (int i = 0; i < 4; ++i) {
      double exposed = c[i];
      if (s.tp_comm_overlap) {
        // Each collective and the GEMM that reads (or writes) its tensor are cut into tp pieces and
        // pipelined (Wang et al., ASPLOS 2023, "Overlap Communication with Dependent Computation
        // via Decomposition"; Transformer Engine's userbuffers overlap, PyTorch's AsyncTP): the
        // first piece's collective waits, the others hide behind that GEMM's pieces as far as
        // those last. Only its own GEMM: the next pair's GEMM needs this collective's result
        // (through the norm and residual), so it cannot run beside it.
        // The framework realises the share ω_d of that ideal hiding (its pieces synchronise at
        // every step and share HBM and NVLink with the GEMM pieces; FrameworkProfile).
        const double ideal = c[i] / tpd + std::max(0.0, c[i] - t.tp_pair_gemm[i]) * (tpd - 1) / tpd;
        exposed -= run.profile.tp_overlap_efficiency * (c[i] - ideal);
      }
      e[i] = exposed * (1 - o.tp_overlap);  // §7.6: ω_tp hidden
    }
    const double forward = e[0] + e[1] + e[2] + e[3];
    t.tp_forward = forward;
    t.tp = 2 * forward;
    // Full recompute repeats every forward collective. torchtitan's per-op SAC saves the
    // reduce-scatters' outputs but not the all-gathers' (distributed/activation_checkpoint.py,
    // its comm_ops list), and the backward needs each all-gathered input for its weight gradient:
    // the all-gathers run again. Under its FlexAttention split (sac_attention_full_ac) the
    // attention is under full AC: its reduce-scatter reruns with it, the FFN's all-gather as above.
    // Plain TP all-reduces, which the save list does not hold (activation_census.cpp
    // torchtitan_sac): the attention's all-reduce reruns, since its output makes the residual the
    // FFN's norm reads in the backward; the FFN's own is read by no backward in the block.
    t.tp_recompute[static_cast<int>(Recompute::full)] = forward;
    if (o.selective_policy == SelectivePolicy::torchtitan_op_sac) {
      t.tp_recompute[static_cast<int>(Recompute::selective)] =
          s.sp ? e[0] + e[2] + (o.sac_attention_full_ac ? e[1] : 0) : e[1];
    }
  }
}

// CP (§7.5): Ulysses all-to-alls, ring hops overlapped with the core, or all-gather.
void cp_time(LayerTime& t, const Model& m, const Run& run, const Device& d, const Strategy& s,
             const LayerFlops& flops) {
  const RunOptions& o = run.options;
  const KernelScales eta = kernel_scales(run, d, s);
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double shards = static_cast<double>(s.tp * s.cp);
  const double beta_a = o.beta_a;
  const double n_cp = b * seq / static_cast<double>(s.cp);
  const bool tree = o.latency_tree;
  if (s.cp > 1) {
    const double a_tp = static_cast<double>(m.heads) / static_cast<double>(s.tp);
    // MLA's per-head K and V, and K and V expanded to the query heads (repeat_kv_heads), are a wide.
    const double kv_heads = m.attention == AttentionKind::mla || o.repeat_kv_heads
                                ? static_cast<double>(m.heads)
                                : static_cast<double>(std::max(m.kv_heads, s.tp));
    const double kv_tp = kv_heads / static_cast<double>(s.tp);
    const double d_qk = static_cast<double>(m.qk_head_dim()), d_v = static_cast<double>(m.v_dim());
    double fwd = 0, bwd = 0;
    if (s.cp_algo == CpAlgo::allgather) {
      const Group g = make_group(d, s.tp, s.cp, tree);
      const double S_ag = b * seq * kv_tp * (d_qk + d_v) * beta_a;
      fwd = all_gather(g, S_ag);
      bwd = reduce_scatter(g, S_ag);
    } else {
      const std::int64_t cp_u = s.cp_algo == CpAlgo::ring ? 1 : s.cp_u;
      const std::int64_t cp_r = s.cp / cp_u;
      if (cp_u > 1) {
        const Group g = make_group(d, s.tp, cp_u, tree);
        const double S_qkv = n_cp * (a_tp * d_qk + kv_tp * d_qk + kv_tp * d_v) * beta_a;
        const double S_o = n_cp * a_tp * d_v * beta_a;
        fwd += all_to_all(g, d, S_qkv) + all_to_all(g, d, S_o);
        bwd += all_to_all(g, d, S_qkv) + all_to_all(g, d, S_o);
      }
      if (cp_r > 1) {
        const GroupPlacement ring = place_group(s.tp * cp_u, cp_r, d.placement_domain());
        // MLA passes the decompressed per-head K and V, or with mla_cp_latent the compressed latent
        // and the shared rotary key (§7.5).
        const double width = m.attention == AttentionKind::mla && o.mla_cp_latent
                                 ? static_cast<double>(m.kv_lora_rank + m.qk_rope_dim)
                                 : (kv_tp / static_cast<double>(cp_u)) * (d_qk + d_v);
        const double S_kv = b * (seq / static_cast<double>(cp_r)) * width * beta_a;
        const double hops = static_cast<double>(cp_r - 1);
        const double hide = hops / static_cast<double>(cp_r);
        const double core_b = kernel_time(
            d, eta.core, core_backward_ratio(run) * flops_core(flops) / shards * core_width_scale(m, run, d).backward);
        // §7.6: hidden behind the core's last cp_r − 1 blocks, unless cp_overlap is off.
        const double cover = o.cp_overlap ? 1.0 : 0.0;
        fwd += std::max(0.0, hops * point_to_point(d, ring.inside_node, S_kv) - cover * hide * t.core_forward);
        bwd += std::max(0.0, hops * point_to_point(d, ring.inside_node, 2 * S_kv) - cover * hide * core_b);
      }
    }
    t.cp_forward = fwd;
    t.cp = fwd + bwd;
  }
}

// EP (§7.5): dispatch and combine all-to-alls; ETP gathers around the expert GEMMs.
void ep_time(LayerTime& t, const Model& m, const Run& run, const Device& d, const Strategy& s, double rho) {
  const RunOptions& o = run.options;
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double h = static_cast<double>(m.hidden), beta_a = o.beta_a;
  const bool tree = o.latency_tree;
  double forward = 0, planning = 0;  // the dispatch and combine, and what plans them, per direction
  if (s.ep > 1 || s.etp > 1) {
    const double n_moe = b * seq / static_cast<double>(s.cp * s.tp);
    const double S_d = n_moe * static_cast<double>(m.top_k) * h * beta_a * rho;
    const Group ep = make_group(d, s.etp, s.ep, tree);
    forward = 2 * all_to_all(ep, d, S_d);
    if (sends_once_per_node(o.ep_dispatch) && !ep.inside_node) {
      // One copy per other node that holds one of the token's k experts (expert_node_spread.hpp:
      // fewer under group-limited routing, which confines a token to some nodes).
      const std::int64_t nodes = ep.size / std::max<std::int64_t>(1, ep.per_node);
      const double remote = n_moe * h * beta_a * rho * remote_node_copies(m, nodes);
      forward = 2 * node_dedup_all_to_all(ep, d, S_d, remote);
    }
    // HybridEP plans each dispatch from the whole group's routing: it first all-gathers every
    // rank's bool routing map [tokens × E] (DeepEP hybrid-ep branch, csrc/hybrid_ep/executor/
    // executor.cu, Executor::allgather_routing_map: NCCL's all_gather_into_tensor across nodes,
    // its own 32-SM kernel inside one). Forward only: the backward's dispatch and combine reuse the
    // forward's handle (Megatron-LM moe/fused_a2a.py, HybridEPDispatch and HybridEPCombine).
    planning = o.ep_dispatch == EpDispatch::hybridep
                   ? all_gather(ep, static_cast<double>(s.ep) * n_moe * static_cast<double>(m.experts))
                   : 0;
    planning += split_exchange_time(m, run, d, s);
    if (s.etp > 1) {
      const Group etp = make_group(d, 1, s.etp, tree);
      forward +=
          all_gather(etp, static_cast<double>(s.etp) * S_d) + reduce_scatter(etp, static_cast<double>(s.etp) * S_d);
    }
  }
  // The host's issue time the forward's sync exposes (moe_host_issue.hpp), with or without EP.
  // The all-to-all and DeepEP sync before their dispatch, which then runs while the host issues
  // the experts; HybridEP syncs after its own, and without EP there is no dispatch to run.
  HostExposure host;
  if (run.profile.host_launch_time > 0 && moe_dispatch_syncs_host(o)) {
    MoeLayerGpu g;
    g.queued_ahead = o.ep_dispatch == EpDispatch::hybridep ? 0 : forward / 2;
    g.experts_forward = t.experts_forward;
    g.forward = t.forward + t.tp_forward + t.cp_forward + forward + planning;
    g.backward = t.backward + (t.tp - t.tp_forward) + (t.cp - t.cp_forward) + forward;
    const FrameworkProfile& p = run.profile;
    host = host_issue_exposure(moe_layer_launches(m, run, s),
                               HostIssueRates{p.host_launch_time, p.host_expert_launch_time, p.host_op_launch_time}, g);
  }
  // §7.6: ω_ep of it hidden, but no more than the compute it runs beside: Megatron's
  // overlap_moe_expert_parallel_comm pairs one micro-batch's forward of the layer with another's
  // backward, so both directions' collectives hide behind the layer's forward and backward
  // compute, and what they exceed it by stays exposed (each direction keeps its share); the other
  // micro-batch's work fills the host's idle time the same way. Not all of it runs beside that
  // compute: the profile's ep_overlap_share of it does, the same for every dispatcher, as the
  // schedule sets it (data/frameworks/megatron.yaml).
  const double raw = 2 * forward + planning + host.forward + host.backward;
  const double share = run.profile.ep_overlap_share;
  const double hidden = std::min(o.ep_overlap * share * raw, t.forward + t.backward);
  const double kept = raw > 0 ? 1 - hidden / raw : 0;
  t.ep_forward = (forward + planning + host.forward) * kept;
  t.ep = raw * kept;
  t.ep_hidden = raw - t.ep;
  // The V pairs each chunk's comm with the other's compute (unless dualpipe_overlap is off).
  if (s.schedule == Schedule::dualpipev && o.dualpipe_overlap) t.ep_forward = t.ep = t.ep_hidden = 0;
}

}  // namespace

double split_exchange_time(const Model& m, const Run& run, const Device& d, const Strategy& s) {
  const RunOptions& o = run.options;
  if (o.ep_dispatch != EpDispatch::all_to_all || o.moe_mode != MoeMode::dropless) return 0;
  const double counts = 8 * static_cast<double>(m.experts);
  switch (run.profile.framework) {
    case Framework::megatron: {
      const Group tp_ep = make_group(d, 1, s.etp * s.ep, o.latency_tree);
      return all_gather(tp_ep, static_cast<double>(s.etp * s.ep) * counts);
    }
    case Framework::torchtitan: return all_to_all(make_group(d, s.etp, s.ep, o.latency_tree), d, counts);
    case Framework::deepspeed: return 0;
  }
  return 0;
}

LossTime loss_time(const Run& run, const Device& d, const Strategy& s, double v_pad) {
  const double elements = static_cast<double>(s.micro_batch) * static_cast<double>(run.seq) /
                          static_cast<double>(s.cp) * v_pad / static_cast<double>(s.tp);
  const double bw = d.eta_hbm * d.hbm_bandwidth;
  const FrameworkProfile& p = run.profile;
  const RunOptions& o = run.options;
  if (o.compiled_loss) {
    // One fused kernel each way (compiled_loss): the forward reads the logits once (the
    // logsumexp), the backward reads them and writes their gradient.
    return LossTime{elements * o.beta_a / bw, elements * 2 * o.beta_a / bw};
  }
  if (o.te_cross_entropy) {
    // Transformer Engine's cross-entropy: the forward kernel reads each logit and writes its
    // gradient in place; the backward scales it by the per-token loss gradient (element_mul_kernel:
    // Megatron passes an unreduced loss, so the gradient is not the scalar 1 the kernel skips).
    return LossTime{elements * 2 * o.beta_a / bw, elements * 2 * o.beta_a / bw};
  }
  const bool split = o.vocab_parallel_loss && s.tp > 1;
  return LossTime{elements * (split ? p.loss_parallel_bytes_forward : p.loss_bytes_forward) / bw,
                  elements * (split ? p.loss_parallel_bytes_backward : p.loss_bytes_backward) / bw};
}

LayerTime layer_time(const Model& m, const Run& run, const Device& d, const Strategy& s, FfnKind ffn) {
  LayerTime t;
  const RunOptions& o = run.options;
  const double b = static_cast<double>(s.micro_batch), seq = static_cast<double>(run.seq);
  const double rho = routed_load_factor(o);
  const LayerFlops flops = layer_flops(m, ffn, b * seq, seq, b, rho);
  compute_time(t, m, run, d, s, ffn, flops, rho);
  tp_time(t, m, run, d, s, ffn);
  cp_time(t, m, run, d, s, flops);
  if (ffn == FfnKind::moe) ep_time(t, m, run, d, s, rho);
  return t;
}

}  // namespace meshfit
