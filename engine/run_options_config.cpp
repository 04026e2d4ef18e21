#include "engine/run_options_config.hpp"

#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/megatron_pipeline_layout.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {
constexpr double kMax = std::numeric_limits<double>::max();
}

void apply_recompute_switches(const YAML::Node& value, const std::string& source, const std::string& field, Run& run) {
  RunOptions& o = run.options;
  if (value.IsScalar()) {
    const std::string& name = value.Scalar();
    o.selective_policy = SelectivePolicy::switches;
    if (name == "megatron_core_attn")
      o.switches = RecomputeSwitches::megatron_core_attn();
    else if (name == "hyperparallel")
      o.switches = RecomputeSwitches::hyperparallel();
    else if (name == "mindformers")
      o.switches = RecomputeSwitches::mindformers(false);
    else if (name == "mindformers_select_comm")
      o.switches = RecomputeSwitches::mindformers(true);
    else if (name == "torchtitan_op") {
      o.switches = RecomputeSwitches::hyperparallel();  // for layers the SAC record does not cover
      o.selective_policy = SelectivePolicy::torchtitan_op_sac;
    } else {
      throw InputError(source, field,
                       "expected megatron_core_attn, hyperparallel, torchtitan_op, mindformers, "
                       "mindformers_select_comm or a map of switches, got " +
                           quoted_text(name));
    }
    return;
  }
  const Fields f(value, source, field);
  f.reject_unknown({"attBMM", "attUp", "softmax", "dropout", "headCast", "normOp", "gather", "ffAct"});
  RecomputeSwitches sw{true, true, true, true, true, true, true, true};
  auto take = [&](const char* key, bool& out) {
    if (const auto v = f.optional_bool(key))
      out = *v;
    else if (f.has(key))
      f.fail(key, "expected true or false");
  };
  take("attBMM", sw.attBMM);
  take("attUp", sw.attUp);
  take("softmax", sw.softmax);
  take("dropout", sw.dropout);
  take("headCast", sw.headCast);
  take("normOp", sw.normOp);
  take("gather", sw.gather);
  take("ffAct", sw.ffAct);
  o.switches = sw;
  o.selective_policy = SelectivePolicy::switches;
}

namespace {

// Every key a run-options map may hold (docs/spec/cli.md, "run options"); any other is refused.
const std::vector<std::string> kRunOptionKeys = {"flash_attention",
                                                 "attention_dropout",
                                                 "hidden_dropout",
                                                 "embedding_dropout",
                                                 "beta_a",
                                                 "beta_n",
                                                 "beta_sm",
                                                 "beta_lse",
                                                 "softmax_cast",
                                                 "fused_swiglu",
                                                 "eager_rope",
                                                 "moe_mode",
                                                 "capacity_factor",
                                                 "moe_imbalance",
                                                 "logits_kept_bytes",
                                                 "loss_transient_bytes",
                                                 "loss_parallel_transient_bytes",
                                                 "output_saves_gathered_input",
                                                 "loss_chunks",
                                                 "compiled_loss",
                                                 "te_cross_entropy",
                                                 "precision_aware_optimizer",
                                                 "vocab_parallel_loss",
                                                 "ep_dispatcher",
                                                 "ep_token_budget",
                                                 "moe_router_fusion",
                                                 "cuda_graph_attn",
                                                 "cuda_graph_moe_router",
                                                 "rope_fusion",
                                                 "te_fused_grouped_mlp",
                                                 "fp8_attention",
                                                 "tp_overlap",
                                                 "ep_overlap",
                                                 "cp_overlap",
                                                 "pp_overlap",
                                                 "dualpipe_overlap",
                                                 "dp_overlap",
                                                 "latency_model",
                                                 "mla_cp_latent",
                                                 "repeat_kv_heads",
                                                 "sac_saves_attention",
                                                 "sac_attention_full_ac",
                                                 "expert_shard_group",
                                                 "fsdp_root_and_last_block_unsharded",
                                                 "fsdp_output_group_unsharded",
                                                 "shard_override",
                                                 "vocab_pad_multiple",
                                                 "reshard_after_forward",
                                                 "fsdp_prefetch_layers",
                                                 "overlap_grad_reduce",
                                                 "grad_bucket_bytes",
                                                 "allgather_bucket_bytes",
                                                 "optimizer_step_temp_bytes_per_param",
                                                 "grad_clip",
                                                 "token_id_bytes",
                                                 "recompute_switches",
                                                 "recompute_rest",
                                                 "offload_optimizer",
                                                 "layers_per_vstage",
                                                 "pipeline_layout",
                                                 "full_layers_per_vstage",
                                                 "layers_first_stage",
                                                 "layers_last_stage",
                                                 "account_embedding",
                                                 "account_loss",
                                                 "fp8_weight_cache_bytes",
                                                 "fp8_saved_matmul_inputs",
                                                 "fp8_allgather",
                                                 "fp8_param_gather",
                                                 "defer_grad_sync",
                                                 "pipeline_stage_buffers",
                                                 "pipeline_outputs",
                                                 "torch_compile",
                                                 "fp8_linears",
                                                 "fp8_scaling",
                                                 "grad_clip_model",
                                                 "beta_P",
                                                 "beta_G",
                                                 "beta_master",
                                                 "beta_state",
                                                 "beta_gather",
                                                 "beta_red",
                                                 "beta_gcomm"};

// The readers the options share: a key absent leaves its field as it was.
struct OptionReader {
  const Fields& f;
  void flag(const char* key, bool& out) const {
    if (const auto v = f.optional_bool(key)) out = *v;
  }
  void optional_flag(const char* key, std::optional<bool>& out) const {
    if (const auto v = f.optional_bool(key)) out = *v;
  }
  void number(const char* key, double& out, double lo, double hi) const {
    if (const auto v = f.optional_number(key, lo, hi)) out = *v;
  }
  // One of the names, each with its value; `expected` lists them for the error.
  template <class T>
  void choice(const char* key, T& out, std::initializer_list<std::pair<const char*, T>> names,
              const char* expected) const {
    const auto v = f.optional_string(key);
    if (!v) return;
    for (const auto& [name, value] : names) {
      if (*v == name) {
        out = value;
        return;
      }
    }
    f.fail(key, std::string("expected ") + expected + ", got " + quoted_text(*v));
  }
};

// What the layers keep for the backward and how attention, the MoE block and the loss run (§7).
void read_activation_options(const OptionReader& r, Run& run) {
  RunOptions& o = run.options;
  r.flag("flash_attention", run.flash_attention);
  r.optional_flag("attention_dropout", o.attention_dropout);
  r.optional_flag("hidden_dropout", o.hidden_dropout);
  r.optional_flag("embedding_dropout", o.embedding_dropout);
  r.number("beta_a", o.beta_a, 0.5, 8);
  r.number("beta_n", o.beta_n, 0.5, 8);
  r.number("beta_sm", o.beta_sm, 0.5, 8);
  r.number("beta_lse", o.beta_lse, 0, 64);
  r.flag("softmax_cast", o.softmax_cast);
  r.flag("fused_swiglu", o.fused_swiglu);
  r.flag("eager_rope", o.eager_rope);
  r.choice("moe_mode", o.moe_mode, {{"dropless", MoeMode::dropless}, {"capacity", MoeMode::capacity}},
           "dropless or capacity");
  r.number("capacity_factor", o.capacity_factor, 1e-3, 64);
  r.number("moe_imbalance", o.moe_imbalance, 1, 64);
  r.number("logits_kept_bytes", o.logits_kept_bytes, 0, 64);
  r.number("loss_transient_bytes", o.loss_transient_bytes, 0, 64);
  r.number("loss_parallel_transient_bytes", o.loss_parallel_transient_bytes, 0, 64);
  r.flag("output_saves_gathered_input", o.output_saves_gathered_input);
  r.number("loss_chunks", o.loss_chunks, 1, 1e6);
  r.flag("compiled_loss", o.compiled_loss);
  r.flag("te_cross_entropy", o.te_cross_entropy);
  r.flag("precision_aware_optimizer", o.precision_aware_optimizer);
  r.flag("vocab_parallel_loss", o.vocab_parallel_loss);
  r.number("token_id_bytes", o.token_id_bytes, 0, 16);
}

// FSDP's resharding and prefetch, the communication overlaps and the collectives' model.
void read_parallel_options(const OptionReader& r, const std::string& source, Run& run) {
  const Fields& f = r.f;
  RunOptions& o = run.options;
  if (const auto q = f.optional_int("vocab_pad_multiple")) run.profile.vocab_pad_multiple = *q;
  r.choice("reshard_after_forward", run.profile.reshard_after_forward,
           {{"true", ReshardAfterForward::on},
            {"false", ReshardAfterForward::off},
            {"auto", ReshardAfterForward::automatic}},
           "true, false or auto");
  if (const auto n = f.optional_int("fsdp_prefetch_layers", 0)) o.fsdp_prefetch_layers = *n;
  r.flag("overlap_grad_reduce", o.overlap_grad_reduce);
  r.choice("ep_dispatcher", o.ep_dispatch,
           {{"alltoall", EpDispatch::all_to_all}, {"deepep", EpDispatch::deepep}, {"hybridep", EpDispatch::hybridep}},
           "alltoall, deepep or hybridep");
  r.flag("ep_token_budget", o.ep_token_budget);
  r.flag("moe_router_fusion", o.moe_router_fusion);
  r.flag("cuda_graph_attn", o.cuda_graph_attn);
  r.flag("cuda_graph_moe_router", o.cuda_graph_moe_router);
  r.flag("rope_fusion", o.rope_fusion);
  r.flag("te_fused_grouped_mlp", o.te_fused_grouped_mlp);
  r.flag("fp8_attention", o.fp8_attention);
  r.number("tp_overlap", o.tp_overlap, 0, 1);
  r.number("ep_overlap", o.ep_overlap, 0, 1);
  r.flag("cp_overlap", o.cp_overlap);
  r.flag("pp_overlap", o.pp_overlap);
  r.flag("dualpipe_overlap", o.dualpipe_overlap);
  r.flag("dp_overlap", o.dp_overlap);
  r.flag("mla_cp_latent", o.mla_cp_latent);
  r.flag("repeat_kv_heads", o.repeat_kv_heads);
  r.flag("sac_saves_attention", o.sac_saves_attention);
  r.flag("sac_attention_full_ac", o.sac_attention_full_ac);
  if (const auto g = f.optional_int("expert_shard_group")) o.expert_shard_group = *g;
  if (f.has("shard_override")) {
    if (!f.raw("shard_override").IsMap()) f.fail("shard_override", "expected a map {P: n, G: n, OS: n}");
    const Fields so(f.raw("shard_override"), source, f.path("shard_override"));
    so.reject_unknown({"P", "G", "OS"});
    o.shard_override.P = so.required_int("P");
    o.shard_override.G = so.required_int("G");
    o.shard_override.OS = so.required_int("OS");
  }
  if (const auto held = f.optional_bool("fsdp_root_and_last_block_unsharded")) {
    run.profile.fsdp_root_and_last_block_unsharded = *held;
  }
  if (const auto held = f.optional_bool("fsdp_output_group_unsharded")) {
    run.profile.fsdp_output_group_unsharded = *held;
  }
  bool tree = o.latency_tree;
  r.choice("latency_model", tree, {{"ring", false}, {"tree", true}}, "ring or tree");
  o.latency_tree = tree;
}

// Bytes per value, the buckets (in bytes, so after the bytes per value), the optimizer step and
// gradient clipping, and FP8.
void read_precision_options(const OptionReader& r, Run& run) {
  const Fields& f = r.f;
  RunOptions& o = run.options;
  Precision& p = run.precision;
  r.number("beta_P", p.beta_P, 0, 16);
  r.number("beta_G", p.beta_G, 0, 16);
  r.number("beta_master", p.beta_master, 0, 16);
  r.number("beta_state", p.beta_state, 0, 16);
  r.number("beta_gather", p.beta_gather, 0, 16);
  r.number("beta_red", p.beta_red, 0, 16);
  r.number("beta_gcomm", p.beta_gcomm, 0, 16);
  if (const auto b = f.optional_number("grad_bucket_bytes", 0, kMax)) {
    run.profile.grad_bucket_elements = p.beta_G > 0 ? *b / p.beta_G : 0;
  }
  if (const auto b = f.optional_number("allgather_bucket_bytes", 0, kMax)) {
    run.profile.allgather_bucket_elements = p.beta_P > 0 ? *b / p.beta_P : 0;
  }
  r.number("optimizer_step_temp_bytes_per_param", o.optimizer_step_temp_bytes_per_param, 0, 64);
  r.flag("grad_clip", o.grad_clip);
  bool seed = o.grad_clip_seed;
  r.choice("grad_clip_model", seed, {{"none", false}, {"seed", true}}, "none or seed");
  o.grad_clip_seed = seed;
  r.flag("offload_optimizer", o.offload_optimizer);
  if (f.has("fp8_weight_cache_bytes")) {
    double bytes = 0;
    r.number("fp8_weight_cache_bytes", bytes, 0, 8);
    o.fp8_weight_cache_bytes = bytes;
  }
  r.flag("fp8_saved_matmul_inputs", o.fp8_saved_matmul_inputs);
  if (f.optional_bool("fp8_allgather").value_or(false)) p.beta_gather = 1;
  if (f.optional_bool("fp8_param_gather").value_or(false)) run.keep_fp8_weights();
  r.optional_flag("defer_grad_sync", o.defer_grad_sync);
  r.optional_flag("pipeline_stage_buffers", o.pipeline_stage_buffers);
  r.choice("pipeline_outputs", o.pipeline_outputs,
           {{"none", PipelineOutputs::none}, {"sent", PipelineOutputs::sent}, {"all", PipelineOutputs::all}},
           "none, sent or all");
  r.flag("torch_compile", o.torch_compile);
  r.flag("fp8_linears", o.fp8_linears);
  r.choice("fp8_scaling", o.fp8_scaling,
           {{"tensorwise", Fp8Scaling::tensorwise}, {"rowwise", Fp8Scaling::rowwise}, {"mxfp8", Fp8Scaling::mxfp8}},
           "tensorwise, rowwise or mxfp8");
}

// The recompute switches and the pipeline's layer split.
void read_layout_options(const OptionReader& r, const std::string& source, Run& run) {
  const Fields& f = r.f;
  RunOptions& o = run.options;
  if (f.has("recompute_switches"))
    apply_recompute_switches(f.raw("recompute_switches"), source, f.path("recompute_switches"), run);
  r.choice("recompute_rest", o.recompute_rest, {{"none", Recompute::none}, {"selective", Recompute::selective}},
           "none or selective");
  if (f.has("layers_per_vstage")) o.layers_per_vstage = f.int_list("layers_per_vstage", 0);
  // Or Megatron's own layout string, e.g. pipeline_layout: "Et|(tt|)*30mL" (megatron_pipeline_layout.hpp);
  // the strategy's checks hold its stage count and layers to the model's.
  if (const auto text = f.optional_string("pipeline_layout")) {
    if (f.has("layers_per_vstage")) f.fail("pipeline_layout", "give it or layers_per_vstage, not both");
    const PipelineLayoutText parsed = parse_megatron_pipeline_layout(*text);
    if (!parsed.error.empty()) f.fail("pipeline_layout", parsed.error);
    o.layers_per_vstage = parsed.layers_per_vstage;
    o.layout_mtp_depths = parsed.mtp_depths;
  }
  if (f.has("full_layers_per_vstage")) o.full_layers_per_vstage = f.int_list("full_layers_per_vstage", 0);
  if (const auto n = f.optional_int("layers_first_stage")) o.layers_first_stage = *n;
  if (const auto n = f.optional_int("layers_last_stage")) o.layers_last_stage = *n;
  r.flag("account_embedding", o.account_embedding);
  r.flag("account_loss", o.account_loss);
}

}  // namespace

void apply_run_options(const YAML::Node& doc, const std::string& source, Run& run, const std::string& prefix) {
  const Fields f(doc, source, prefix);
  f.reject_unknown(kRunOptionKeys);
  const OptionReader r{f};
  read_activation_options(r, run);
  read_parallel_options(r, source, run);
  read_precision_options(r, run);
  read_layout_options(r, source, run);
}

}  // namespace meshfit
