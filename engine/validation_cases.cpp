#include "engine/validation_cases.hpp"

#include <algorithm>
#include <initializer_list>
#include <cctype>
#include <utility>

#include "engine/case_device_names.hpp"
#include "engine/case_layout.hpp"
#include "engine/megatron_pipeline_layout.hpp"
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/model_config.hpp"
#include "engine/presets.hpp"
#include "engine/run_config.hpp"
#include "engine/yaml_fields.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit {

const char* to_string(MemoryMetric m) {
  switch (m) {
    case MemoryMetric::reserved: return "reserved";
    case MemoryMetric::allocated: return "allocated";
    case MemoryMetric::unstated: return "unstated";
  }
  return "?";
}

namespace {

// The case's model block uses Hugging Face names with one schema for every MoE family
// (num_experts, moe_intermediate_size, n_shared_experts, shared_expert_intermediate_size,
// first_k_dense_replace): translate it to the family's own config fields. A model_type meshfit
// does not know is read as llama's block, its experts (if any) given as symbols, and noted.
YAML::Node translate_model(const YAML::Node& in, const Fields& f, std::vector<std::string>& notes) {
  YAML::Node out = YAML::Clone(in);
  std::string type = f.optional_string("model_type").value_or("");
  const auto& known = known_model_types();
  if (!type.empty() && std::find(known.begin(), known.end(), type) == known.end()) {
    notes.push_back("model_type " + quoted_text(type) + " -> llama block" +
                    (f.has("num_experts") ? " with its experts" : ""));
    out["model_type"] = "llama";
    if (f.has("num_experts")) {
      out["model"]["E"] = in["num_experts"];
      out["model"]["k"] = in["num_experts_per_tok"];
      out["model"]["f_e"] = in["moe_intermediate_size"];
    }
    type = "llama";
  }
  if (f.has("num_experts") && (type == "deepseek_v3" || type == "deepseek_v2")) {
    out["n_routed_experts"] = in["num_experts"];
  }
  // Families whose config names its experts num_local_experts, each intermediate_size wide.
  const bool local_experts = type == "mixtral" || type == "granitemoe" || type == "gpt_oss";
  if (f.has("num_experts") && local_experts && !f.has("num_local_experts")) {
    out["num_local_experts"] = in["num_experts"];
  }
  if (f.has("moe_intermediate_size") && (local_experts || type == "olmoe")) {
    out["intermediate_size"] = in["moe_intermediate_size"];
  }
  const std::int64_t shared = f.optional_int("n_shared_experts", 0).value_or(0);
  if (f.has("shared_expert_intermediate_size") && shared > 0) {
    // The case states the total width of all shared experts; the symbols take one expert's.
    const std::int64_t total = *f.optional_int("shared_expert_intermediate_size");
    out["model"]["n_s"] = shared;
    out["model"]["f_se"] = total / shared;
  }
  const std::int64_t first_dense = f.optional_int("first_k_dense_replace", 0).value_or(0);
  if (first_dense > 0 && type != "deepseek_v3" && type != "deepseek_v2") {
    YAML::Node list(YAML::NodeType::Sequence);
    for (std::int64_t l = 0; l < first_dense; ++l) list.push_back(l);
    out["mlp_only_layers"] = list;
  }
  return out;
}

// The case's device: the preset its name means (engine/case_device_names.hpp), with the case's
// capacity where stated.
Device case_device(const Fields& d, std::vector<std::string>& notes) {
  const std::string name = d.optional_string("name").value_or("");
  const auto capacity_gib = d.optional_number("capacity_gib", 1e-3, 1e6);
  const std::string preset = case_device_preset(name).value_or("");
  Device dev;
  if (!preset.empty()) {
    dev = load_device(preset);
  } else if (capacity_gib) {
    dev = load_device("h100-80gb");
    notes.push_back("unknown device " + quoted_text(name) + ": h100-80gb figures with the case's capacity");
  } else {
    d.fail("name", "unknown device " + quoted_text(name) + " and no capacity_gib; expected a GPU model such as " +
                       case_device_examples());
  }
  if (capacity_gib) dev.capacity = *capacity_gib * 1024.0 * 1024.0 * 1024.0;
  dev.name = name;
  return dev;
}

// Megatron's recompute_modules (memory-model.md §7.5; Megatron-Core transformer_layer.py):
// core_attn drops softmax and headCast; mla_up_proj drops attUp; mlp reruns a dense layer's whole
// MLP from its input; moe_act reruns the routed experts' activation; layernorm drops the norms'
// inputs, where the norm is a module of its own — with Transformer Engine a dense layer's norms
// are fused into the linears that follow them (TELayerNormColumnParallelLinear, the layer's own
// norm an IdentityOp), so there only MoE layers' pre-MLP norms would rerun: dense models keep them.
RecomputeSwitches megatron_modules(const std::string& detail, bool moe_model) {
  RecomputeSwitches sw{true, true, true, true, true, true, true, true};
  // "recompute_modules=[a, b]", spaces allowed around '='; anything else keeps the default.
  const std::string key = "recompute_modules";
  std::size_t at = detail.find(key);
  if (at != std::string::npos) at = detail.find_first_not_of(" \t", at + key.size());
  if (at != std::string::npos && detail[at] == '=') {
    at = detail.find_first_not_of(" \t", at + 1);
  } else {
    at = std::string::npos;
  }
  const std::size_t close = at != std::string::npos && detail[at] == '[' ? detail.find(']', at) : std::string::npos;
  if (close == std::string::npos) return RecomputeSwitches::megatron_core_attn();
  const std::string modules = detail.substr(at + 1, close - at - 1);
  if (modules.find("core_attn") != std::string::npos) sw.softmax = sw.headCast = false;
  if (modules.find("layernorm") != std::string::npos && moe_model) sw.normOp = false;
  if (modules.find("mla_up_proj") != std::string::npos) sw.attUp = false;
  if (modules.find("moe_act") != std::string::npos) sw.moe_act = false;
  // "mlp" itself, not the "mlp" inside another module's name
  std::size_t at_mlp = modules.find("mlp");
  while (at_mlp != std::string::npos && at_mlp > 0 && std::isalnum(static_cast<unsigned char>(modules[at_mlp - 1])))
    at_mlp = modules.find("mlp", at_mlp + 1);
  if (at_mlp != std::string::npos) sw.dense_mlp = false;
  return sw;
}

}  // namespace

const char* to_string(FlopsConvention c) {
  switch (c) {
    case FlopsConvention::megatron: return "megatron";
    case FlopsConvention::megatron_pre_2025: return "megatron_pre_2025";
    case FlopsConvention::megatron_2021_paper: return "megatron_2021_paper";
  }
  return "?";
}

// FLOPs per token as Megatron-LM reports them (training.py, num_floating_point_operations): 12·h
// per layer for every weight GEMM width (3 passes × 2 stacked GEMMs × 2 FLOPs), the attention
// term (1 + g/a + s/(2h))·a·d_h, the FFN width times 1.5 when gated (routed experts times top-k,
// plus the shared experts, dense and MoE layers each counted), and 6·h·V for the logits.
// megatron_pre_2025: the same file before commit 8873b55d6a (2025-03-06, "Fixes in number of
// floating-point operation estimates for MoE and attention layer"), as at f2e5db402c (2024-07):
// the score term s/h, not halved for the causal mask, and every layer's FFN the routed width
// (moe_ffn_hidden_size·top-k when the model has experts, no shared experts).
// megatron_2021_paper: Narayanan et al. 2021 (arXiv 2104.04473), appendix, eq. 3:
// 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration, four passes of every layer (the forward
// recomputed under their full activation recompute) and the unhalved score term; for their GPT
// (MHA, f = 4h, ungated) that is 4/3 of megatron_pre_2025's layer part plus 6·h·V, which is how
// it is generalised here. Only for GQA/MHA models (MLA has its own terms there): 0 otherwise.
double megatron_reported_flops_per_token(const Model& m, double seq, double v_pad, FlopsConvention convention) {
  if (m.attention == AttentionKind::mla) return 0;
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double g = static_cast<double>(m.kv_heads), dh = static_cast<double>(m.head_dim);
  const double L = static_cast<double>(m.layers);
  const double gated = m.gated ? 1.5 : 1.0;
  const bool current = convention == FlopsConvention::megatron;
  const double score = current ? seq / (2 * h) : seq / h;
  const double attention = L * (1 + g / a + score) * a * dh;
  double ffn = 0;
  if (current) {
    const double moe_layers = static_cast<double>(m.moe_layer_count());
    const double dense_layers = L - moe_layers;
    ffn = gated * (dense_layers * static_cast<double>(m.ffn) +
                   moe_layers * (static_cast<double>(m.expert_ffn * m.top_k) +
                                 static_cast<double>(m.shared_experts * m.shared_expert_ffn)));
  } else {
    ffn = gated * L * (m.is_moe() ? static_cast<double>(m.expert_ffn * m.top_k) : static_cast<double>(m.ffn));
  }
  const double passes = convention == FlopsConvention::megatron_2021_paper ? 4.0 / 3.0 : 1.0;
  return passes * 12 * h * (attention + ffn) + 6 * h * v_pad;
}

namespace {

// torchtitan's stack: torchtitan itself, and tools/probe's runs, which parallelise a model in
// torchtitan's order with the same FSDP2, DTensor TP and per-op SAC (tools/probe/README.md).
bool torchtitan_stack(const ValidationCase& vc) {
  return vc.framework == "torchtitan" || vc.framework == "pytorch-probe";
}

// Whether one ';'-separated clause of a case's lower-cased `features.other` names every one of
// `words` and does not say the setting is off or unknown ("not stated", "not compiled", "off",
// "neither the model nor the loss compiled", a clause opening with "no ").
bool clause_states(const std::string& other, std::initializer_list<const char*> words) {
  for (std::size_t start = 0; start < other.size();) {
    const std::size_t end = std::min(other.find(';', start), other.size());
    const std::string clause = other.substr(start, end - start);
    start = end + 1;
    const bool all =
        std::all_of(words.begin(), words.end(), [&](const char* w) { return clause.find(w) != std::string::npos; });
    const std::size_t first = clause.find_first_not_of(' ');
    const bool negated = clause.find("not ") != std::string::npos || clause.find(" off") != std::string::npos ||
                         clause.find("neither ") != std::string::npos ||
                         (first != std::string::npos && clause.compare(first, 3, "no ") == 0);
    if (all && !negated) return true;
  }
  return false;
}

// The case's parallel degrees and batch split, nulls derived or defaulted (case_layout.hpp).
CaseLayout read_case_layout(ValidationCase& vc, const Fields& c, const std::string& src) {
  const Fields r(c.raw("run"), src, "run");
  const Fields s(c.raw("strategy"), src, "strategy");
  CaseLayoutInput in;
  in.framework = vc.framework;
  in.world = s.required_int("world_size");
  in.dp = s.optional_int("dp");
  in.tp = s.optional_int("tp");
  in.pp = s.optional_int("pp");
  in.cp = s.optional_int("cp");
  in.global_batch = r.optional_int("global_batch_size");
  in.micro_batch = r.optional_int("micro_batch_size");
  in.num_microbatches = r.optional_int("num_microbatches");
  const CaseLayoutResult res = resolve_case_layout(in, vc.defaults_taken);
  if (res.gap) {
    const std::string& field = res.gap->field;
    const std::size_t dot = field.find('.');
    if (res.gap->not_stated) throw NotStated(src, field, res.gap->reason);
    (field.substr(0, dot) == "run" ? r : s).fail(field.substr(dot + 1), res.gap->reason);
  }
  return res.layout;
}

// The case's run, precision and features (the run's options they name), into vc.run.
void read_case_run(ValidationCase& vc, const Fields& c, const std::string& src, const CaseLayout& layout) {
  auto& notes = vc.defaults_taken;
  const Fields r(c.raw("run"), src, "run");
  const Fields p(c.raw("precision"), src, "precision");
  const Fields feat(c.raw("features"), src, "features");
  RunFlags flags;
  if (r.has("seq_len")) {
    flags.seq = r.required_int("seq_len");
  } else {
    // No framework has a default sequence length (Megatron's --seq-length is required); what a
    // run of an unstated length most likely used is the context the model was trained for, its
    // config's max_position_embeddings, where the case's model states it.
    const Fields mf(c.raw("model"), src, "model");
    const auto context = mf.optional_int("max_position_embeddings", 1);
    if (!context) {
      throw NotStated(src, "run.seq_len",
                      "not stated by the source, and the estimate needs it (nor does model.max_position_embeddings "
                      "give the model's context)");
    }
    flags.seq = *context;
    notes.push_back("null seq_len -> " + std::to_string(*context) + " (model.max_position_embeddings)");
  }
  flags.global_batch = layout.global_batch;
  flags.micro_batch = layout.micro_batch;
  flags.framework = vc.framework == "other"           ? "megatron"
                    : vc.framework == "pytorch-probe" ? "torchtitan"
                                                      : vc.framework;
  if (vc.framework == "other") notes.push_back("framework other -> megatron profile");
  if (vc.framework == "pytorch-probe") notes.push_back("framework pytorch-probe -> torchtitan profile");
  const auto optimizer = p.optional_string("optimizer");
  if (optimizer && (*optimizer == "sgd" || *optimizer == "sgd_momentum")) flags.optimizer = "sgd_momentum";
  vc.run = make_run(flags, true,
                    InputOrigin{src,
                                "run",
                                {{"seq", "run.seq_len"},
                                 {"global_batch", "run.global_batch_size"},
                                 {"micro_batch", "run.micro_batch_size"}}});
  Precision& pr = vc.run.precision;
  if (const auto v = p.optional_number("param_bytes", 0, 16))
    pr.beta_P = *v;
  else
    notes.push_back("null param_bytes -> " + pr.preset);
  if (const auto v = p.optional_number("master_weight_bytes", 0, 16))
    pr.beta_master = *v;
  else
    notes.push_back("null master_weight_bytes -> " + pr.preset);
  if (const auto v = p.optional_number("grad_bytes", 0, 16))
    pr.beta_G = *v;
  else
    notes.push_back("null grad_bytes -> " + pr.preset);
  if (const auto v = p.optional_number("optimizer_state_bytes", 0, 64)) {
    pr.beta_state = *v / vc.run.optimizer_states();
  } else {
    notes.push_back("null optimizer_state_bytes -> " + pr.preset);
  }
  if (const auto fa = feat.optional_bool("flash_attention")) {
    vc.run.flash_attention = *fa;
  } else {
    notes.push_back("null flash_attention -> on");
  }
  if (feat.optional_bool("chunked_loss").value_or(false)) vc.run.options.loss_chunks = 8;
  // Transformer Engine's FP8 linears keep their inputs for the backward in fp8 (§7.4.7); torchao's
  // float8 training keeps the high-precision input and casts again in the backward.
  const bool fp8 = feat.optional_bool("fp8").value_or(false);
  if (fp8 && vc.framework == "megatron") vc.run.options.fp8_saved_matmul_inputs = true;
  vc.run.options.fp8_linears = fp8;
  vc.run.options.torch_compile = feat.optional_bool("torch_compile").value_or(false);
  // The MoE dispatcher is named only in the free text of `other` (validation README): DeepEP and
  // HybridEP send a token once per destination node.
  const std::string other = to_lower(feat.optional_string("other").value_or(""));
  if (other.find("hybridep") != std::string::npos) {
    vc.run.options.ep_dispatch = EpDispatch::hybridep;
  } else if (other.find("deepep") != std::string::npos) {
    vc.run.options.ep_dispatch = EpDispatch::deepep;
  }
  // And HybridEP's static token budget (Megatron's moe_expert_rank_capacity_factor), which spares
  // its dispatch the host sync.
  if (clause_states(other, {"moe_expert_rank_capacity_factor"}) || clause_states(other, {"static token budget"}))
    vc.run.options.ep_token_budget = true;
  // And what sets the host's launches per MoE layer (moe_host_issue.hpp): Megatron's fused router,
  // and Transformer Engine's scoped CUDA graphs ("CUDA graphs ... with scopes attn + moe_router").
  if (clause_states(other, {"router fusion"})) vc.run.options.moe_router_fusion = true;
  if (clause_states(other, {"cuda graph", "scope", "attn"})) vc.run.options.cuda_graph_attn = true;
  if (clause_states(other, {"cuda graph", "scope", "moe_router"})) vc.run.options.cuda_graph_moe_router = true;
  if (clause_states(other, {"rope fusion"})) vc.run.options.rope_fusion = true;
  // And Transformer Engine's fused grouped MLP ("op fuser with the CuTe DSL fused grouped MLP").
  if (clause_states(other, {"fused grouped mlp"})) vc.run.options.te_fused_grouped_mlp = true;
  // And FP8 attention ("FP8 attention (fp8_dot_product_attention True)"; "FP8 attention off" says
  // the opposite).
  if (clause_states(other, {"fp8 attention"})) vc.run.options.fp8_attention = true;
  // So is the FP8 scaling recipe ("float8 rowwise", "float8 tensorwise", "MXFP8").
  if (fp8 && other.find("rowwise") != std::string::npos) vc.run.options.fp8_scaling = Fp8Scaling::rowwise;
  if (fp8 && other.find("mxfp8") != std::string::npos) vc.run.options.fp8_scaling = Fp8Scaling::mxfp8;
  // And a compiled loss (torchtitan's compile.components "loss"), which the README asks a case to
  // state there.
  if (clause_states(other, {"compil", "loss"})) vc.run.options.compiled_loss = true;
  // And Transformer Engine's fused cross-entropy (Megatron-Bridge's cross_entropy_loss_fusion with
  // cross_entropy_fusion_impl "te": its GPT provider's default and its performance scripts').
  if (clause_states(other, {"fused cross-entropy", "transformer engine"})) vc.run.options.te_cross_entropy = true;
  // A Megatron-Bridge run whose case says nothing of its loss takes Bridge's: its GPT provider
  // turns cross_entropy_loss_fusion on and its performance scripts, which publish its measured
  // runs, set cross_entropy_fusion_impl "te" (scripts/performance, since bf75c658c, 2025-11).
  if (vc.framework == "megatron" && to_lower(vc.source).find("megatron-bridge") != std::string::npos &&
      other.find("cross-entropy") == std::string::npos) {
    vc.run.options.te_cross_entropy = true;
    notes.push_back("source Megatron-Bridge -> Transformer Engine fused cross-entropy");
  }
  // FP8 weights (Megatron's --fp8-param-gather), where `other` says so; otherwise a Megatron-Bridge
  // run takes its FP8 presets' (delayed and current scaling, MXFP8: fp8_param_gather True,
  // src/megatron/bridge/training/mixed_precision.py) and any other Megatron-LM's default (off).
  const bool stated_param_gather = clause_states(other, {"fp8_param_gather"}) ||
                                   clause_states(other, {"fp8-param-gather"}) || clause_states(other, {"fp8 param"});
  const bool bridge = to_lower(vc.source).find("megatron-bridge") != std::string::npos;
  if (fp8 && vc.framework == "megatron" && (stated_param_gather || bridge)) {
    vc.run.keep_fp8_weights();
    if (!stated_param_gather) notes.push_back("source Megatron-Bridge, FP8 -> FP8 weights (fp8_param_gather)");
  }
  // And a pipeline split that gives the embedding and the loss a layer slot each (Megatron's
  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split;
  // memory-model.md §5.1), e.g. "pipeline split counts the embedding and the loss".
  if (clause_states(other, {"pipeline split", "embedding"})) vc.run.options.account_embedding = true;
  if (clause_states(other, {"pipeline split", "loss"})) vc.run.options.account_loss = true;
  // And Megatron's precision-aware optimizer (--use-precision-aware-optimizer; Megatron-Bridge's
  // use_precision_aware_optimizer), which steps on the gradients' own dtype.
  if (clause_states(other, {"precision-aware optimizer"})) vc.run.options.precision_aware_optimizer = true;
  // And torchao's float8 FSDP all-gather (enable_fsdp_float8_all_gather: the weights are cast
  // before they are gathered, one byte each).
  if (fp8 && clause_states(other, {"fsdp float8 all-gather"})) vc.run.precision.beta_gather = 1;
  // And an unfused SwiGLU (silu and the product as separate ops, keeping the silu output too):
  // Megatron-LM's local transformer before its bias_swiglu fusion (megatron/model/transformer.py,
  // `F.silu(x[0]) * x[1]`, as at 99b044bf), as eager torchtitan runs it.
  if (clause_states(other, {"unfused swiglu"})) vc.run.options.fused_swiglu = false;
  // And K and V expanded to the query heads before the attention (torchtitan's repeat_kv before
  // pytorch/torchtitan#2259), e.g. "K and V repeated to the query heads".
  if (clause_states(other, {"k and v repeated"})) vc.run.options.repeat_kv_heads = true;
  // And torchtitan's per-op SAC rerunning an attention kernel its save list missed (cuDNN SDPA on
  // compute capability 10 before pytorch/torchtitan#2095), e.g. "per-op SAC recomputes the cuDNN
  // attention".
  if (clause_states(other, {"sac recomputes", "attention"})) vc.run.options.sac_saves_attention = false;
  // And torchtitan's FlexAttention split of 2025 (per-op SAC on the FFN or MoE only), e.g. "the
  // attention under full AC, per-op SAC on the MoE".
  if (clause_states(other, {"attention under full ac"})) vc.run.options.sac_attention_full_ac = true;
  // A pipeline whose every stage, the last with its logits, kept its outputs until the step's end:
  // torchtitan before it stepped with return_outputs=False (pytorch#165822, October 2025).
  if (clause_states(other, {"every stage keeps its outputs"})) vc.run.options.pipeline_outputs = PipelineOutputs::all;
  // And torchtitan's FSDP wrapping before pytorch/torchtitan#1094 (July 2025): the root module's
  // tables, final norm and output, and the last block, kept gathered ("root and last block kept
  // gathered"), where today's keeps only the [norm, output] group.
  if (clause_states(other, {"root and last block", "gathered"})) {
    vc.run.profile.fsdp_root_and_last_block_unsharded = true;
    vc.run.profile.fsdp_output_group_unsharded = false;
  }
  // And torchtitan's AsyncTP, its TP communication overlap (the strategy's tp_comm_overlap).
  if (other.find("asynctp") != std::string::npos || other.find("async tp") != std::string::npos) {
    vc.strategy.tp_comm_overlap = true;  // read_case_strategy keeps it where TP has SP
    notes.push_back("features.other AsyncTP -> tp_comm_overlap");
  }
  // The communication the source states it overlapped with compute (README's
  // features.comm_overlap): tp hides the TP/SP collectives (Megatron's --tp-comm-overlap,
  // Transformer Engine's userbuffers GEMM overlap; torchtitan's AsyncTP), pp the pipeline's
  // point-to-point (--overlap-p2p-comm), dp the gradient reduce and parameter gather
  // (--overlap-grad-reduce, --overlap-param-gather), ep the MoE dispatch (search-and-time.md §7.6).
  // Unstated (null): the run options' defaults.
  if (feat.has("comm_overlap")) {
    const YAML::Node list = feat.raw("comm_overlap");
    if (!list.IsSequence()) feat.fail("comm_overlap", "expected a list of tp, pp, dp, ep or null");
    std::string applied;
    for (const YAML::Node& item : list) {
      const std::string what = item.IsScalar() ? item.Scalar() : "";
      if (what == "tp")
        vc.strategy.tp_comm_overlap = true;  // read_case_strategy keeps it where TP has SP
      else if (what == "pp")
        vc.run.options.pp_overlap = true;
      else if (what == "dp")
        vc.run.options.dp_overlap = true;
      else if (what == "ep")
        vc.run.options.ep_overlap = 1;
      else
        feat.fail("comm_overlap", "expected tp, pp, dp or ep, got " + quoted_text(printable(what)));
      applied += (applied.empty() ? "" : ", ") + what;
    }
    if (!applied.empty()) vc.defaults_taken.push_back("comm_overlap [" + applied + "] -> hidden (§7.6)");
  } else if (clause_states(other, {"ep communication overlap"})) {
    // A case whose `other` names Megatron's EP overlap but has no comm_overlap list ("no EP
    // communication overlap" and "EP communication overlap off" do not).
    vc.run.options.ep_overlap = 1;
    vc.defaults_taken.push_back("features.other EP communication overlap -> comm_overlap [ep]");
  }
}

// The case's strategy, into vc.strategy (and the reshard setting it names, into vc.run).
void read_case_strategy(ValidationCase& vc, const Fields& c, const std::string& src, const CaseLayout& layout) {
  auto& notes = vc.defaults_taken;
  const Fields s(c.raw("strategy"), src, "strategy");
  Strategy& st = vc.strategy;
  st.dp = layout.dp;
  st.tp = layout.tp;
  st.pp = layout.pp;
  st.cp = layout.cp;
  st.ep = s.optional_int("ep").value_or(1);
  st.etp = s.optional_int("etp").value_or(1);
  st.sp = s.optional_bool("sp").value_or(false) && st.tp > 1;
  // A null vpp: a schedule that runs one stage per rank has 1; DualPipeV two by its definition;
  // torchtitan builds two stages per rank for any other multi-stage schedule when no layers per
  // stage are given (torchtitan/distributed/pipeline_parallel.py, _get_pipeline_metadata:
  // stages_per_rank = 1 if single-stage else 2); Megatron has no default for an interleaved
  // schedule, whose virtual size the source must state.
  const std::optional<std::string> stated_schedule = s.optional_string("pp_schedule");
  const bool multi_stage =
      st.pp > 1 && stated_schedule && (*stated_schedule == "interleaved_1f1b" || *stated_schedule == "dualpipev");
  if (const auto v = s.optional_int("vpp")) {
    st.vpp = *v;
  } else if (multi_stage && (*stated_schedule == "dualpipev" || torchtitan_stack(vc))) {
    st.vpp = 2;
    notes.push_back("null vpp -> 2 (" + *stated_schedule + ": two stages per rank)");
  } else if (multi_stage) {
    throw NotStated(src, "strategy.vpp",
                    "not stated by the source, and " + *stated_schedule + " needs the virtual pipeline size");
  } else {
    st.vpp = 1;
    notes.push_back("null vpp -> 1");
  }
  if (st.pp > 1) {
    const std::string sched = s.optional_string("pp_schedule").value_or(st.vpp > 1 ? "interleaved_1f1b" : "1f1b");
    if (!s.has("pp_schedule")) notes.push_back("null pp_schedule -> " + sched);
    if (sched == "1f1b")
      st.schedule = Schedule::one_f_one_b;
    else if (sched == "interleaved_1f1b")
      st.schedule = Schedule::interleaved_1f1b;
    else if (sched == "gpipe")
      st.schedule = Schedule::gpipe;
    else if (sched == "zero_bubble" || sched == "zb_h1")
      st.schedule = Schedule::zb_h1;
    else if (sched == "dualpipev")
      st.schedule = Schedule::dualpipev;
    else
      s.fail("pp_schedule",
             "expected 1f1b, interleaved_1f1b, gpipe, zero_bubble or dualpipev, got " + quoted_text(sched));
  }
  if (st.cp > 1) {
    // A null cp_algo takes the framework's: torchtitan all-gathers the K/V shards
    // (context_parallel_rotate_method "allgather", torchtitan/config_manager.py since its CP
    // landed), DeepSpeed's sequence parallelism is Ulysses, Megatron's cp_comm_type p2p a ring.
    const std::string fallback = torchtitan_stack(vc) ? "allgather" : vc.framework == "deepspeed" ? "ulysses" : "ring";
    const std::string algo = s.optional_string("cp_algo").value_or(fallback);
    if (!s.has("cp_algo")) notes.push_back("null cp_algo -> " + fallback);
    if (algo == "ring")
      st.cp_algo = CpAlgo::ring;
    else if (algo == "ulysses") {
      st.cp_algo = CpAlgo::ulysses;
      st.cp_u = st.cp;
    } else if (algo == "allgather")
      st.cp_algo = CpAlgo::allgather;
    else if (algo == "hybrid") {
      st.cp_algo = CpAlgo::hybrid;
      st.cp_u = hybrid_ulysses_degree(vc.model, st, 8);
    } else
      s.fail("cp_algo", "expected ring, ulysses or allgather, got " + quoted_text(algo));
  }
  const auto zero = s.optional_int("zero_stage", 0);
  if (zero && *zero > 3) s.fail("zero_stage", "expected 0, 1, 2 or 3");
  st.zero = static_cast<int>(zero.value_or(torchtitan_stack(vc) ? 3 : 1));
  if (!zero) notes.push_back("null zero_stage -> " + std::to_string(st.zero));
  if (st.dp * st.cp == 1) st.zero = 0;  // one rank: nothing to shard
  st.shard_group = st.zero >= 1 ? s.optional_int("shard_group").value_or(st.dp * st.cp) : 1;
  if (const auto reshard = s.optional_bool("reshard_after_forward")) {
    vc.run.profile.reshard_after_forward = *reshard ? ReshardAfterForward::on : ReshardAfterForward::off;
  }
  // comm_overlap [tp] (read_case_run): Megatron and torchtitan decompose the TP collectives only
  // of sequence-parallel layers (H25).
  if (st.tp_comm_overlap && !(st.tp > 1 && st.sp)) {
    st.tp_comm_overlap = false;
    notes.push_back("comm_overlap tp without tp > 1 and SP -> no TP overlap");
  }
  st.micro_batch = layout.micro_batch;
  st.num_microbatches = layout.num_microbatches;
}

// The case's recompute mode and, for selective recompute, what its framework saves.
void read_case_recompute(ValidationCase& vc, const Fields& c, const std::string& src) {
  Strategy& st = vc.strategy;
  const Fields rc(c.raw("recompute"), src, "recompute");
  const std::string mode = rc.optional_string("mode").value_or("none");
  if (!rc.has("mode")) vc.defaults_taken.push_back("null recompute.mode -> none");
  const std::string detail = rc.optional_string("detail").value_or("");
  if (mode == "none")
    st.recompute = Recompute::none;
  else if (mode == "full")
    st.recompute = Recompute::full;
  else if (mode == "selective")
    st.recompute = Recompute::selective;
  else
    rc.fail("mode", "expected none, selective or full, got " + quoted_text(mode));
  if (const auto layers = rc.optional_int("layers")) {
    if (st.recompute == Recompute::full) st.recompute_layers = *layers;
  }
  if (st.recompute == Recompute::selective) {
    // torchtitan's per-op SAC keeps matmul and attention outputs: HyperParallel's policy (§7.5).
    // MoE layers (no analytic SAC record) fall back to HyperParallel's switches, the same policy.
    vc.run.options.switches =
        torchtitan_stack(vc) ? RecomputeSwitches::hyperparallel() : megatron_modules(detail, vc.model.is_moe());
    if (torchtitan_stack(vc)) {
      vc.run.options.selective_policy = SelectivePolicy::torchtitan_op_sac;  // the probe's SAC is torchtitan's
    }
  }
}

// The case's device and what was measured: memory, and throughput stated in one of three ways.
void read_case_measured(ValidationCase& vc, const Fields& c, const std::string& src) {
  auto& notes = vc.defaults_taken;
  const Strategy& st = vc.strategy;
  const std::int64_t world = st.dp * st.tp * st.pp * st.cp;
  vc.cluster = Cluster{case_device(Fields(c.raw("device"), src, "device"), notes), world};
  resolve_device_facts(vc.run, vc.cluster.device);
  const Fields me(c.raw("measured"), src, "measured");
  vc.measured_gib = me.optional_number("value_gib", 1e-6, 1e6);
  const std::string confidence = me.optional_string("confidence").value_or("");
  if (!confidence.empty() && confidence != "high" && confidence != "medium" && confidence != "low") {
    me.fail("confidence", "expected high, medium, low or null, got " + quoted_text(confidence));
  }
  vc.low_confidence = confidence == "low";
  vc.first_iteration = me.optional_bool("first_iteration").value_or(false);
  const std::string metric = me.optional_string("metric").value_or("");
  vc.metric = metric == "reserved"    ? MemoryMetric::reserved
              : metric == "allocated" ? MemoryMetric::allocated
                                      : MemoryMetric::unstated;
  if (!metric.empty() && metric != "reserved" && metric != "allocated") {
    me.fail("metric", "expected reserved, allocated or null, got " + quoted_text(metric));
  }
  // An unstated metric is the one the framework's memory log leads with: Megatron's report_memory
  // (training.py; Megatron-Bridge's train_utils.py the same) prints peak allocated first, and the
  // Bridge's own tuning notes quote it as "peak max allocated"; torchtitan's log prints max
  // reserved; DeepSpeed's see_memory_usage states both, and reserved is the one that OOMs.
  vc.compared = vc.metric == MemoryMetric::allocated ? MemoryMetric::allocated : MemoryMetric::reserved;
  if (vc.metric == MemoryMetric::unstated && vc.measured_gib && vc.framework == "megatron") {
    vc.compared = MemoryMetric::allocated;
    notes.push_back("null metric -> allocated (Megatron's memory report)");
  }
  vc.measured_tokens_per_sec = me.optional_number("tokens_per_sec_per_device", 0, 1e9);
  if (!vc.measured_tokens_per_sec) {
    // Throughput a case states another way: its step time (gb·s tokens per step over N devices),
    // or Megatron's reported TFLOP/s per GPU over Megatron's own FLOP count per token.
    const double tokens = static_cast<double>(vc.run.global_batch * vc.run.seq);
    // Each source counts its FLOPs its own way: the case names the formula (README's
    // measured.flops_convention); unstated, today's training.py.
    const std::string conv = me.optional_string("flops_convention").value_or("megatron");
    FlopsConvention convention = FlopsConvention::megatron;
    if (conv == "megatron_pre_2025")
      convention = FlopsConvention::megatron_pre_2025;
    else if (conv == "megatron_2021_paper")
      convention = FlopsConvention::megatron_2021_paper;
    else if (conv != "megatron")
      me.fail("flops_convention",
              "expected megatron, megatron_pre_2025 or megatron_2021_paper, got " + quoted_text(conv));
    const double flops = megatron_reported_flops_per_token(
        vc.model, static_cast<double>(vc.run.seq),
        static_cast<double>(padded_vocab(vc.model.vocab, vc.run.profile.vocab_pad_multiple, st.tp)), convention);
    if (const auto step = me.optional_number("step_time_s", 1e-9, 1e9)) {
      vc.measured_tokens_per_sec = tokens / (*step * static_cast<double>(world));
      notes.push_back("tokens/s per device from step_time_s (gb·seq / (T·N))");
    } else if (const auto tf = me.optional_number("tflops_per_device", 1e-9, 1e6);
               tf && vc.framework == "megatron" && flops > 0) {
      vc.measured_tokens_per_sec = *tf * 1e12 / flops;
      notes.push_back(std::string("tokens/s per device from tflops_per_device over Megatron's FLOPs per token (") +
                      to_string(convention) + (me.has("flops_convention") ? ")" : ", the default)"));
    }
  }
}

// A Megatron pipeline layout the case's `other` quotes, e.g. "pipeline layout 'Et|(tt|)*30mL'"
// (or "pipeline_model_parallel_layout ..."): its decoder layers per virtual stage, which must
// cover the model's layers and MTP depths over the strategy's pp·vpp virtual stages.
void stated_pipeline_layout(ValidationCase& vc, const Fields& feat) {
  const std::string other = feat.optional_string("other").value_or("");
  const std::string lower = to_lower(other);
  std::size_t at = std::string::npos;  // just after the first of the names
  for (const std::string key : {"pipeline_model_parallel_layout", "pipeline layout"}) {
    if (const std::size_t k = lower.find(key);
        k != std::string::npos && (at == std::string::npos || k + key.size() < at))
      at = k + key.size();
  }
  if (at == std::string::npos) return;
  const std::size_t open = other.find_first_of("'\"`", at);
  const std::size_t close = open == std::string::npos ? open : other.find(other[open], open + 1);
  if (close == std::string::npos) {
    feat.fail("other", "names a pipeline layout but quotes none; expected e.g. pipeline layout 'Et|(tt|)*30mL'");
  }
  const std::string text = other.substr(open + 1, close - open - 1);
  const PipelineLayoutText parsed = parse_megatron_pipeline_layout(text);
  if (!parsed.error.empty()) feat.fail("other", "pipeline layout: " + parsed.error);
  const Strategy& st = vc.strategy;
  std::int64_t layers = 0;
  for (const std::int64_t n : parsed.layers_per_vstage) layers += n;
  const auto stages = static_cast<std::int64_t>(parsed.layers_per_vstage.size());
  if (stages != st.pp * st.vpp || layers != vc.model.layers || parsed.mtp_depths != vc.model.mtp_depths) {
    feat.fail("other", "pipeline layout " + quoted_text(text) + " has " + std::to_string(stages) + " virtual stages, " +
                           std::to_string(layers) + " decoder layers and " + std::to_string(parsed.mtp_depths) +
                           " MTP depths; expected pp*vpp = " + std::to_string(st.pp * st.vpp) + ", the model's " +
                           std::to_string(vc.model.layers) + " and " + std::to_string(vc.model.mtp_depths));
  }
  vc.run.options.layers_per_vstage = parsed.layers_per_vstage;
  vc.run.options.account_embedding = vc.run.options.account_loss = false;
  vc.defaults_taken.push_back("features.other pipeline layout -> layers per virtual stage");
}

// Megatron refuses layers that do not divide its pipeline stages (transformer_block.py,
// get_num_layers_to_build: "num_layers should be divisible by pipeline_model_parallel_size", and
// by vp_size) unless the run says how to split them. A case that does not say takes the split
// Megatron-Bridge's recipes give such models: the embedding and the loss a slot each when that
// makes the split even (account_for_embedding/loss_in_pipeline_split: Llama-3.1-405B's and
// Qwen3-235B-A22B's recipes, recipes/llama/llama3.py and recipes/qwen/qwen3_moe.py), else ⌈L/nv⌉
// decoder layers per virtual stage from the first and the rest on the last, beside the MTP
// depths and the loss (DeepSeek-V3's layouts, recipes/deepseek/deepseek_v3.py,
// _get_deepseek_v3_pipeline_layout: 16×3 + 13, 8×7 + 5, 4×15 + 1), and where that leaves the last
// stage nothing, a slot each for the embedding, the MTP depths and the loss.
void megatron_uneven_split(ValidationCase& vc) {
  RunOptions& o = vc.run.options;
  const Strategy& st = vc.strategy;
  const std::int64_t nv = st.pp * st.vpp, layers = vc.model.layers;
  const bool stated = o.account_embedding || o.account_loss || !o.layers_per_vstage.empty() ||
                      o.layers_first_stage > 0 || o.layers_last_stage > 0;
  if (vc.framework != "megatron" || st.pp <= 1 || st.schedule == Schedule::dualpipev || stated || layers % nv == 0)
    return;
  if ((layers + 2) % nv == 0) {
    o.account_embedding = o.account_loss = true;
    vc.defaults_taken.push_back(
        "layers not divisible by pp*vpp -> the embedding and the loss a slot each "
        "(Megatron-Bridge's account_for_embedding/loss_in_pipeline_split)");
    return;
  }
  const std::int64_t each = (layers + nv - 1) / nv, last = layers - (nv - 1) * each;
  if (last >= 1) {
    o.layers_per_vstage.assign(static_cast<std::size_t>(nv), each);
    o.layers_per_vstage.back() = last;
    vc.defaults_taken.push_back("layers not divisible by pp*vpp -> " + std::to_string(each) +
                                " per virtual stage from the first, " + std::to_string(last) +
                                " on the last (Megatron-Bridge's DeepSeek-V3 layouts)");
    return;
  }
  // Too many virtual stages for that (61 layers on 32): the embedding, each MTP depth and the loss a
  // slot each, as Megatron-Bridge's 1,024-GPU H100 DeepSeek-V3 recipe lays pp 8 x vpp 4 out
  // ("Et|(tt|)*30mL", perf_recipes/deepseek/h100/deepseek_v3.py).
  const std::int64_t mtp = vc.model.mtp_depths, slots = layers + 2 + mtp;
  if (slots % nv != 0 || slots / nv < 1 + mtp) return;
  const std::int64_t per = slots / nv;
  o.layers_per_vstage.assign(static_cast<std::size_t>(nv), per);
  o.layers_per_vstage.front() = per - 1;
  o.layers_per_vstage.back() = per - 1 - mtp;
  vc.defaults_taken.push_back("layers not divisible by pp*vpp -> " + std::to_string(per) +
                              " slots per virtual stage, the embedding, the MTP depths and the loss one each "
                              "(Megatron-Bridge's H100 DeepSeek-V3 layout)");
}

ValidationCase read_case(const YAML::Node& node, const std::string& path, std::size_t index) {
  ValidationCase vc;
  const Fields top(node, path + ": case #" + std::to_string(index + 1));
  vc.id = top.optional_string("id").value_or("");
  if (vc.id.empty()) top.fail("id", "missing; expected a unique string");
  const std::string src = path + ": case " + quoted_text(vc.id);
  const Fields c(node, src);
  for (const char* key :
       {"framework", "model", "run", "strategy", "recompute", "precision", "features", "device", "measured"}) {
    if (!c.has(key)) c.fail(key, "missing");
  }
  vc.framework = c.optional_string("framework").value_or("");
  if (node["source"].IsScalar()) {
    const std::string s = printable(node["source"].Scalar());
    vc.source = s.substr(0, s.find(' '));
  }
  // pytorch-probe: a run of tools/probe (FSDP2 and DTensor on one rank), priced with torchtitan's
  // profile, which builds on the same PyTorch parts.
  const std::vector<std::string> frameworks = {"torchtitan", "megatron", "deepspeed", "pytorch-probe", "other"};
  if (std::find(frameworks.begin(), frameworks.end(), vc.framework) == frameworks.end()) {
    c.fail("framework",
           "expected torchtitan, megatron, deepspeed, pytorch-probe or other, got " + quoted_text(vc.framework));
  }

  // Model.
  const Fields mf(c.raw("model"), src, "model");
  // The shape every model needs: a source that left one of these out cannot be estimated.
  for (const char* key : {"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"}) {
    if (!mf.has(key)) {
      throw NotStated(src, std::string("model.") + key, "not stated by the source, and every estimate needs it");
    }
  }
  vc.model = model_from_config(translate_model(c.raw("model"), mf, vc.defaults_taken), src + " model", vc.id);

  const CaseLayout layout = read_case_layout(vc, c, src);
  read_case_run(vc, c, src, layout);
  read_case_strategy(vc, c, src, layout);
  stated_pipeline_layout(vc, Fields(c.raw("features"), src, "features"));
  megatron_uneven_split(vc);
  // README (precision): under torchtitan's FSDP the sharded fp32 parameter is itself the master
  // copy, and the param_bytes working weights exist only while gathered (FSDP2's
  // MixedPrecisionPolicy casts the shard to param_dtype for its all-gather): the persistent
  // shard holds the master's bytes, and nothing beside it.
  if (torchtitan_stack(vc) && vc.strategy.zero == 3 && vc.run.precision.beta_master > 0) {
    Precision& pr = vc.run.precision;
    pr.beta_P = pr.beta_master;
    pr.beta_master = 0;
    vc.defaults_taken.push_back("torchtitan FSDP: the fp32 shard is the master, param_bytes only gathered");
  }
  read_case_recompute(vc, c, src);
  read_case_measured(vc, c, src);
  const Strategy& st = vc.strategy;
  const HardRule broken = first_broken_rule(vc.model, vc.run, vc.cluster, st);
  if (broken != HardRule::ok) {
    throw InputError(src + ": strategy: " + explain_rule(broken, vc.model, vc.run, vc.cluster, st));
  }
  return vc;
}

}  // namespace

std::vector<ValidationCase> load_validation_cases(const std::string& path, std::vector<UnestimatedCase>* unestimated) {
  const YAML::Node doc = load_yaml_file(path);
  if (!doc.IsSequence()) throw InputError(path + ": expected a list of cases");
  std::vector<ValidationCase> cases;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    try {
      cases.push_back(read_case(doc[i], path, i));
    } catch (const InputError& e) {
      if (!unestimated) throw;
      const YAML::Node id = doc[i].IsMap() ? doc[i]["id"] : YAML::Node();
      const auto* not_stated = dynamic_cast<const NotStated*>(&e);
      unestimated->push_back({id.IsScalar() ? printable(id.Scalar()) : "case #" + std::to_string(i + 1),
                              not_stated ? not_stated->field() : "", e.what()});
    }
  }
  return cases;
}

}  // namespace meshfit
