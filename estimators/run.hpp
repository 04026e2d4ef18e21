// The run: batch, precision, optimizer and the framework whose defaults apply
// (docs/spec/memory-model.md §2.3, §2.4, §2.6; symbols.md §3, §5).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimators/strategy.hpp"

namespace meshfit {

enum class Framework : std::uint8_t { megatron, torchtitan, deepspeed };
enum class Rules : std::uint8_t { standard, sapp_nd };  // --rules default|sapp-nd
enum class Optimizer : std::uint8_t { adamw, sgd_momentum, muon, adafactor };
enum class ReshardAfterForward : std::uint8_t { on, off, automatic };

// Bytes per element of each model-state tensor (§2.3).
struct Precision {
  std::string preset;      // name of the preset the fields came from
  double beta_P = 2;       // persistent parameters
  double beta_G = 4;       // gradients as accumulated
  double beta_master = 4;  // fp32 master copy, sharded like optimizer state
  double beta_state = 4;   // one optimizer-state element
  double beta_gather = 2;  // a parameter as ZeRO-3/FSDP all-gathers it
  double beta_red = 4;     // an unsharded gradient element at its reduce-scatter
  double beta_gcomm = 4;   // a gradient element as the reduction moves it (time model)
};

// Which expert grid H16 requires (search-and-time.md §2.4): Megatron's (etp·ep divides the stage
// ranks) or torchtitan's (etp = 1, ep divides the FSDP mesh × tp).
enum class ExpertRule : std::uint8_t { megatron, torchtitan };

// Whether the framework's FP8 casts are priced as HBM traffic of their own: none (the GEMM speedup
// is net of them, as Transformer Engine fuses them into its norm and activation kernels) or
// torchao's float8 training kernels (fp8_casts.hpp).
enum class Fp8Casts : std::uint8_t { none, torchao };

// Whose MoE routing kernels a framework runs, for their HBM traffic (moe_routing_bytes.hpp).
enum class MoeRouting : std::uint8_t { none, megatron, torchtitan };

// Defaults a framework imposes (§2.6); any of them can be overridden by an explicit run field.
struct FrameworkProfile {
  Framework framework = Framework::megatron;
  std::string precision_preset = "megatron_bf16";
  std::int64_t vocab_pad_multiple = 128;  // q_V
  ReshardAfterForward reshard_after_forward = ReshardAfterForward::on;
  double grad_bucket_elements = 0;                // ZeRO 0/1 reduce buckets, elements (× β_G)
  double allgather_bucket_elements = 0;           // ZeRO 1/2 all-gather buckets, elements (× β_P)
  ExpertRule expert_rule = ExpertRule::megatron;  // search-and-time.md §2.4
  double eta_fw = 1.0;                            // kernel-efficiency scale of the time model
  // η_fw on a device generation where the framework's measured runs reach another share of the
  // device's achievable FLOPs than on Hopper, where eta_fw was fitted (search-and-time.md §7.3):
  // (generation as Device::generation names it, its scale in place of eta_fw).
  std::vector<std::pair<std::string, double>> eta_fw_by_generation;
  double eta_fw_on(const std::string& generation) const {
    for (const auto& [g, eta] : eta_fw_by_generation)
      if (g == generation) return eta;
    return eta_fw;
  }
  // Pipeline split: the embedding and the loss each take a layer slot (memory-model.md §5.1).
  bool account_embedding = false;
  bool account_loss = false;
  double loss_transient_bytes = 6;  // memory-model.md §2.4, per vocabulary entry per token
  // The same while the loss runs vocabulary-parallel over tp > 1 (the framework's own code path).
  double loss_parallel_transient_bytes = 6;
  // The output projection keeps its TP-gathered (full-sequence) input for its backward, as
  // DTensor's ColwiseParallel does, rather than the SP shard Megatron re-gathers.
  bool output_saves_gathered_input = false;
  // ZeRO-3 with resharding: the root module's parameters (tables, final norm) and the last
  // block's stay gathered through forward and backward (FSDP2's root rule, torchtitan's last block;
  // torchtitan before pytorch/torchtitan#1094).
  bool fsdp_root_and_last_block_unsharded = false;
  // ZeRO-3 with resharding, torchtitan since pytorch/torchtitan#1094 (2025-07-28): the embedding
  // is wrapped alone and resharded, every block resharded, and the final norm with the output
  // layer (a tied table too) one group kept gathered through forward and backward.
  bool fsdp_output_group_unsharded = false;
  // The training loop sets the gradients to None before each step (torch.optim's zero_grad with
  // set_to_none, its default since PyTorch 2.0): with one micro-batch and no pipeline, a step's
  // backward starts with no gradient and builds them layer by layer (memory-model.md §11).
  bool grads_freed_before_step = false;
  // Kernel efficiency of the framework's kernels beyond η_fw (search-and-time.md §7.3, §7.11),
  // calibrated on measured throughput (data/frameworks/*.yaml says on which cases):
  double eta_core = 1.0;       // attention-core kernels relative to GEMMs (FlashAttention-2 via SDPA < cuBLAS)
  double cp_core_scale = 1.0;  // attention core under context parallelism (the framework's ring implementation)
  // Memory-bound elementwise ops (norms, rotary, activation, residual; §7.3's option): off
  // means η_max absorbs them; otherwise HBM passes per byte of the census, eager and compiled.
  bool elementwise = false;
  // An MoE layer's token routing (router, permutation, sort by expert, FP8 quantisation of the
  // grouped GEMMs' operands) priced as HBM traffic from the framework's own kernels
  // (moe_routing_bytes.hpp): Megatron-Core's census, torchtitan's, or none.
  MoeRouting moe_routing = MoeRouting::none;
  double eager_elementwise_passes = 1.0;
  double compiled_elementwise_passes = 1.0;
  // The loss's HBM traffic per logit element of the rank's vocabulary shard, forward and backward
  // (search-and-time.md §7.3): the framework's cross-entropy kernels are memory-bound. 0: η_max
  // absorbs them.
  double loss_bytes_forward = 0, loss_bytes_backward = 0;
  // The same for the vocabulary-parallel loss with tp > 1 where the framework runs another code
  // path there (torchtitan's DTensor loss_parallel); by default the figures above.
  double loss_parallel_bytes_forward = 0, loss_parallel_bytes_backward = 0;
  // Without flash attention the s×s scores pass through HBM (the framework's score, softmax and
  // dropout kernels): bytes per score element, forward and backward (§7.3). 0: not priced.
  double unfused_score_bytes_forward = 0, unfused_score_bytes_backward = 0;
  // FP8 linear GEMMs against bf16: net of the operands' casts when fp8_casts is none, the GEMMs
  // alone when the casts are priced as HBM traffic (fp8_casts.hpp).
  double fp8_gemm_speedup = 1.0;
  double fp8_rowwise_gemm_speedup = 1.0;  // the same with rowwise scales (Fp8Scaling::rowwise)
  double fp8_mxfp8_gemm_speedup = 1.0;    // the same with MXFP8 block scales (Fp8Scaling::mxfp8)
  Fp8Casts fp8_casts = Fp8Casts::none;
  // The framework's own selective recompute, as a run options' recompute_switches preset name
  // (memory-model.md §7.5); empty: the run options' default, megatron_core_attn.
  std::string recompute_switches;
  // ω_d: the share of the ideal decomposed TP overlap (tp_comm_overlap; search-and-time.md §7.5)
  // that the framework's implementation realises, calibrated on paired runs with and without it.
  double tp_overlap_efficiency = 1.0;
  // Host seconds per kernel the framework issues eagerly, which an MoE layer's forward sync exposes
  // (moe_host_issue.hpp); 0: not priced.
  double host_launch_time = 0;
  // The same for the per-expert launches Transformer Engine's GroupedLinear issues from its C++
  // loop (moe_host_issue.hpp); a profile that does not say issues them at host_launch_time.
  double host_expert_launch_time = 0;
  // The same for the per-expert plain tensor ops of Megatron-Core's own Python loop over the local
  // experts (the expert biases' _apply_bias), their autograd nodes and the DDP hooks of the
  // experts' bias parameters (moe_host_issue.hpp); a profile that does not say issues them at
  // host_launch_time.
  double host_op_launch_time = 0;
  // The share of a layer's EP traffic the framework's EP overlap hides (§7.6's ω_ep scaled by it),
  // whatever the dispatcher: what its schedule lets run beside compute. 1: all of it, up to the
  // compute it runs beside.
  double ep_overlap_share = 1.0;
  // The pipeline's point-to-point hides behind compute under an interleaved schedule
  // (pipeline_hops.hpp): Megatron-LM's default.
  bool interleaved_p2p_overlap = false;
  // The optimizer step casts each local shard's gradients to fp32 when they are kept in fewer
  // bytes: Megatron-Core's optimizers (distrib_optimizer.py and optimizer.py,
  // _copy_model_grads_to_main_grads: `main_param.grad = shard_model_grad.float()`).
  bool step_casts_grads_to_fp32 = false;
  // A fused SwiGLU kernel (Megatron's bias_swiglu / TE): eager torchtitan runs silu and the
  // product as separate ops, unfused unless compiled (RunOptions::fused_swiglu's default).
  bool fused_swiglu = true;
  // torchtitan's MoE combine keeps an fp32 copy of the routed outputs (token_dispatcher.py).
  bool moe_fp32_combine = false;
  // Checkpointing core attention keeps the whole fused QKV projection output alive: Megatron-Core's
  // CheckpointFunction saves its inputs as given (tensor_parallel/random.py, save_for_backward),
  // and the value it is given is a view into that output (attention.py, get_query_key_value_tensors
  // splits mixed_qkv), while the uncheckpointed attention saves its own contiguous copy
  // (activation_census.cpp, own_attention_block).
  bool attention_checkpoint_keeps_qkv_output = false;
  // FP8 linears keep Transformer Engine's FP8 weight copies for the whole step
  // (fp8_weight_copies.hpp): Megatron-Core with TE.
  bool te_fp8_weight_copies = false;
};

// Selective-recompute op switches (memory-model.md §7.5): true keeps the op's bytes, false drops
// them and the backward recomputes them. Ops without a switch (attMM, ffMM, linrec, other) are
// always kept.
struct RecomputeSwitches {
  bool attBMM = true, attUp = true, softmax = false, dropout = true, headCast = false, normOp = true, gather = true,
       ffAct = true;  // megatron_core_attn, the default
  // The mindformers preset's switches depend on flash attention and SP (resolved per strategy by
  // switches_for, layer_activations.hpp); `select_comm` is its select_comm_recompute.
  enum class Rule : std::uint8_t { fixed, mindformers } rule = Rule::fixed;
  bool select_comm = false;
  // Megatron-Core's recompute modules by block (transformer_layer.py): `mlp` reruns a dense
  // layer's whole MLP from its checkpointed input (MoE layers untouched); `moe_act` reruns the
  // routed experts' activation function only (dense layers untouched). false: recomputed.
  bool dense_mlp = true, moe_act = true;
  static RecomputeSwitches megatron_core_attn() { return {}; }
  static RecomputeSwitches hyperparallel() { return {true, true, false, false, false, false, false, false}; }
  static RecomputeSwitches mindformers(bool select_comm) {
    RecomputeSwitches sw;
    sw.rule = Rule::mindformers;
    sw.select_comm = select_comm;
    return sw;
  }
  bool operator==(const RecomputeSwitches&) const = default;
};

enum class MoeMode : std::uint8_t { dropless, capacity };

// How MoE tokens reach their experts (search-and-time.md §7.5 prices `all_to_all`): one copy per
// expert, or DeepEP's and HybridEP's one copy per destination node, forwarded over NVLink there.
// HybridEP also all-gathers every rank's routing map before each dispatch (layer_time.cpp).
enum class EpDispatch : std::uint8_t { all_to_all, deepep, hybridep };
inline bool sends_once_per_node(EpDispatch e) { return e != EpDispatch::all_to_all; }

// Which stage outputs PyTorch's pipelining keeps until the step ends (pipeline_stage_buffers.hpp):
// the sent activations, which their pending sends hold until the step's last wait (the default);
// those and the last stage's logits, in output_chunks (torchtitan before it stepped with
// return_outputs=False, pytorch/pytorch#165822, October 2025); or none (sends released once done,
// pytorch/pytorch#193903).
enum class PipelineOutputs : std::uint8_t { none, sent, all };

// What a selective layer keeps: the op switches of §7.5, or torchtitan's per-op selective
// activation checkpointing, which saves every second matmul output and the attention outputs.
// FP8 linears' scaling (torchao float8 training's recipes): one scale per tensor, per row of each
// operand, or MXFP8's one power-of-two scale per block of 32 elements (OCP Microscaling formats
// v1.0; Blackwell's block-scaled tensor cores); each priced with its own GEMM speedup
// (FrameworkProfile).
enum class Fp8Scaling : std::uint8_t { tensorwise, rowwise, mxfp8 };

enum class SelectivePolicy : std::uint8_t { switches, torchtitan_op_sac };

// Facts about kernels and the framework (memory-model.md §2.4). Dropout defaults come from the
// model's config (gpt2's *_pdrop) unless set here.
struct RunOptions {
  // What "fits" means (--fit-margin): the peak times this factor, by recompute mode (none,
  // selective, full), within the budget. 1: the estimate itself. The engine sets it from the
  // validation residuals of the run's family (engine/uncertainty.hpp).
  std::array<double, 3> fit_factor{1, 1, 1};
  double fit_factor_for(Recompute r) const { return fit_factor[static_cast<std::size_t>(r)]; }
  double smallest_fit_factor() const { return std::min({fit_factor[0], fit_factor[1], fit_factor[2]}); }
  std::optional<bool> attention_dropout, hidden_dropout, embedding_dropout;
  double beta_a = 2, beta_n = 2, beta_sm = 2, beta_lse = 4;
  bool softmax_cast = false;
  bool fused_swiglu = true;
  bool eager_rope = false;
  MoeMode moe_mode = MoeMode::dropless;
  double capacity_factor = 1.0;
  double moe_imbalance = 1.0;
  double logits_kept_bytes = 4;
  double loss_transient_bytes = 6;
  double loss_parallel_transient_bytes = 6;  // with vocab_parallel_loss and tp > 1
  // torch.compile on the loss (torchtitan's compile.components "loss"): the three byte counts
  // above give way to the fused kernels' (layer_activations.hpp, backward_transients.hpp).
  bool compiled_loss = false;
  // Transformer Engine's parallel cross-entropy (Megatron's --cross-entropy-loss-fusion with
  // --cross-entropy-fusion-impl te; Megatron-Bridge's default): one Triton kernel writes the
  // logits' gradient into the logits themselves in the forward (transformer_engine/pytorch/
  // triton/cross_entropy.py), so the loss keeps the bf16 logits and needs no transient.
  bool te_cross_entropy = false;
  // Megatron's precision-aware optimizer (--use-precision-aware-optimizer): Transformer Engine's
  // FusedAdam reads the gradient shard in its own dtype as `decoupled_grad`, so the step makes no
  // fp32 copy of bf16 gradients (distrib_optimizer.py, _copy_model_grads_to_main_grads).
  bool precision_aware_optimizer = false;
  bool output_saves_gathered_input = false;
  double loss_chunks = 1;
  EpDispatch ep_dispatch = EpDispatch::all_to_all;
  // HybridEP with a static token budget per EP rank (Megatron's moe_expert_rank_capacity_factor):
  // its buffers are sized in advance, so the dispatch needs no host sync (moe_host_issue.hpp: no
  // host issue time is exposed).
  bool ep_token_budget = false;
  // The host's kernel launches of an MoE layer (moe_host_issue.hpp): Megatron's fused router
  // (--moe-router-fusion) and Transformer Engine's scoped CUDA graphs of the attention
  // (--cuda-graph-scope attn) and of the router with its dispatch preprocessing (moe_router,
  // moe_preprocess), each of which the host launches as one graph.
  bool moe_router_fusion = false;
  bool cuda_graph_attn = false, cuda_graph_moe_router = false;
  // And Megatron's fused rotary for MLA (--apply-rope-fusion, which Megatron-Bridge's DeepSeek
  // providers turn off and its performance scripts turn on): fused_apply_mla_rope_for_q and
  // _for_kv, one kernel each way each, in place of the unfused rotary and its concatenations.
  bool rope_fusion = false;
  // Megatron's routed experts as Transformer Engine's fused grouped MLP (use_transformer_engine_op_fuser;
  // TE transformer_engine/pytorch/ops/fused/grouped_mlp.py, cuDNN's grouped GEMMs on SM100): the
  // GLU activation with gpt-oss's clamps, the router probabilities and the quantisation of FC2's
  // input run in FC1's GEMM epilogue, FC2's bias in FC2's, and their backward in FC2's dgrad
  // epilogue, so none of them moves through HBM on its own (moe_routing_bytes.hpp,
  // layer_time.cpp), and each grouped GEMM is one launch rather than one per expert
  // (moe_host_issue.hpp).
  bool te_fused_grouped_mlp = false;
  // Overlap switches of search-and-time.md §7.6: the exposed fractions 1 − ω of TP and EP
  // collectives, the CP ring hidden behind the attention core, PP point-to-point hidden
  // (Megatron's overlap_p2p_comm), DualPipeV's pairing, and the DP/ZeRO windows.
  // (TP collectives decomposed and pipelined with their GEMMs are the strategy's tp_comm_overlap.)
  double tp_overlap = 0, ep_overlap = 0;
  bool cp_overlap = true, pp_overlap = false, dualpipe_overlap = true, dp_overlap = true;
  bool latency_tree = false;   // §7.4 latency_model: ring (false) or tree
  bool mla_cp_latent = false;  // §7.5: the CP ring passes MLA's compressed latent
  // The model expands grouped K and V heads to the query heads before its attention kernel, so
  // the kernel keeps, and context parallelism moves, a·d_h-wide keys and values: torchtitan's
  // repeat_kv before F.scaled_dot_product_attention (models/llama/model.py, 2024-2025), until it
  // passed enable_gqa instead (pytorch/torchtitan#2259, January 2026).
  bool repeat_kv_heads = false;
  // torchtitan's per-op SAC saves the attention's outputs only where the kernel's op is in its save
  // list: flash and memory-efficient SDPA, not the cuDNN SDPA torchtitan put first on compute
  // capability 10 (pytorch/torchtitan#1196, May 2025) until #2095 added every SDPA backend
  // (December 2025). false: the attention output and its statistics are not kept, and the
  // backward reruns the attention forward.
  bool sac_saves_attention = true;
  // torchtitan with FlexAttention and the model not compiled, from pytorch/torchtitan#1683
  // (September 2025) to #2118 (December 2025): per-op SAC wraps only the FFN or MoE and the
  // attention runs under full AC (_apply_op_sac_to_transformer_block_with_flex;
  // activation_census.cpp).
  bool sac_attention_full_ac = false;
  // memory-model.md §3.1: the routed experts' shard group G_e, instead of G·tp/(ep·etp).
  std::optional<std::int64_t> expert_shard_group;
  // memory-model.md §3.2: the non-expert divisors Z_P, Z_G, Z_OS set directly (MindSpore's
  // optimizer parallelism shards parameters and states but not gradients); 0 = not set.
  struct ShardOverride {
    std::int64_t P = 0, G = 0, OS = 0;
    bool set() const { return P > 0; }
  } shard_override;
  bool vocab_parallel_loss = true;
  std::int64_t fsdp_prefetch_layers = 1;
  bool overlap_grad_reduce = true;
  // PyTorch pipelining turns FSDP gradient sync off for all but a step's last micro-batch, so a
  // stage accumulates unsharded gradients in the reduce dtype through its backward passes
  // (memory-model.md §19 ruling 10). Unset: on for the torchtitan framework with pp > 1.
  std::optional<bool> defer_grad_sync;
  // PyTorch pipelining's PipelineStage buffers: per-micro-batch receive buffers and the outputs
  // kept until the next step (pipeline_stage_buffers.hpp). Unset: on for the torchtitan framework.
  std::optional<bool> pipeline_stage_buffers;
  PipelineOutputs pipeline_outputs = PipelineOutputs::sent;
  double optimizer_step_temp_bytes_per_param = 0;
  bool grad_clip = true;
  bool grad_clip_seed = false;  // grad_clip_model: seed (§9.9), each part scaled once
  double token_id_bytes = 8;
  RecomputeSwitches switches;
  SelectivePolicy selective_policy = SelectivePolicy::switches;
  Recompute recompute_rest = Recompute::none;  // layers of a stage beyond its n_rc full ones
  bool offload_optimizer = false;
  // Layout (§5.1).
  bool account_embedding = false;
  bool account_loss = false;
  std::vector<std::int64_t> layers_per_vstage;  // slots per virtual stage (length nv); empty = not given
  std::int64_t layout_mtp_depths = -1;  // the MTP depths a Megatron pipeline_layout string names; −1 = none given
  std::vector<std::int64_t> full_layers_per_vstage;  // §5.4: fully recomputed layers per virtual stage
  std::int64_t layers_first_stage = 0;               // 0 = not given
  std::int64_t layers_last_stage = 0;
  // FP8 (§6.2, §7.4.7). The FP8 weight copies a step keeps, bytes per GEMM weight element: as the
  // run states it, or unset, the framework's (FrameworkProfile::te_fp8_weight_copies), which
  // engine/run_config.hpp's resolve_device_facts turns into fp8_weight_bytes for the device.
  std::optional<double> fp8_weight_cache_bytes;
  double fp8_weight_bytes = 0;
  // Megatron's --fp8-param-gather (Megatron-Bridge's FP8 presets turn it on): the GEMM weights are
  // kept as those FP8 copies instead of bf16 beside them, and the distributed optimizer gathers them
  // in FP8 (β_gather = 1).
  bool fp8_param_gather = false;
  bool fp8_saved_matmul_inputs = false;
  // Kernel features the time model prices through the framework profile's speedups.
  bool torch_compile = false;  // the model runs under torch.compile
  bool fp8_linears = false;    // the body's linear layers run in FP8 (the output head stays bf16)
  Fp8Scaling fp8_scaling = Fp8Scaling::tensorwise;
  // The attention core runs in FP8 too (Megatron-Core's fp8_dot_product_attention, Transformer
  // Engine's fp8_dpa): cuDNN's FP8 backward visits every key tile up to the diagonal on a windowed
  // layer (attention_tiles.hpp), so that layer's backward costs a causal core's.
  bool fp8_attention = false;
};

// ρ_e: routed rows per token and top-k slot, as the capacity factor drops or pads them, or as the
// dropless router's imbalance loads the busiest rank (memory-model.md §7.4.5).
inline double routed_load_factor(const RunOptions& o) {
  return o.moe_mode == MoeMode::capacity ? o.capacity_factor : o.moe_imbalance;
}

struct Run {
  // The trainer the strategy must run on (the search's trainer_target policy), when one is named.
  std::optional<Framework> target;
  std::int64_t seq = 0;           // s
  std::int64_t global_batch = 0;  // gb, sequences per optimizer step
  std::int64_t micro_batch = 0;   // b; 0 = free (the search chooses)
  FrameworkProfile profile;
  Precision precision;
  Optimizer optimizer = Optimizer::adamw;
  Rules rules = Rules::standard;
  // Under Rules::sapp_nd: the SAPP-ND conventions switched off, one bit per SeedConvention
  // (estimators/seed_conventions.hpp); none by default.
  std::uint32_t seed_off = 0;
  bool flash_attention = true;
  RunOptions options;

  // Optimizer states per body parameter and per table parameter (§2.3).
  double optimizer_states() const;
  double optimizer_states_table() const;
  double beta_opt() const { return optimizer_states() * precision.beta_state + precision.beta_master; }
  double beta_opt_table() const { return optimizer_states_table() * precision.beta_state + precision.beta_master; }
  // Megatron's --fp8-param-gather (RunOptions::fp8_param_gather): the weights are the FP8 copies,
  // and the distributed optimizer gathers them in FP8.
  void keep_fp8_weights() {
    options.fp8_param_gather = true;
    precision.beta_gather = 1;
  }
};

const char* to_string(Framework f);
const char* to_string(Optimizer o);
const char* to_string(Rules r);

}  // namespace meshfit
