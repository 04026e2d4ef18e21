#include "engine/run_options_config.hpp"

#include <limits>

#include "engine/input_error.hpp"
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

void apply_run_options(const YAML::Node& doc, const std::string& source, Run& run, const std::string& prefix) {
  const Fields f(doc, source, prefix);
  f.reject_unknown({"flash_attention",
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
                    "vocab_parallel_loss",
                    "ep_dispatcher",
                    "tp_overlap",
                    "ep_overlap",
                    "cp_overlap",
                    "pp_overlap",
                    "dualpipe_overlap",
                    "dp_overlap",
                    "latency_model",
                    "mla_cp_latent",
                    "expert_shard_group",
                    "fsdp_root_and_last_block_unsharded",
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
                    "full_layers_per_vstage",
                    "layers_first_stage",
                    "layers_last_stage",
                    "account_embedding",
                    "account_loss",
                    "fp8_weight_cache_bytes",
                    "fp8_saved_matmul_inputs",
                    "fp8_allgather",
                    "defer_grad_sync",
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
                    "beta_gcomm"});
  RunOptions& o = run.options;
  Precision& p = run.precision;
  auto flag = [&](const char* key, bool& out) {
    if (const auto v = f.optional_bool(key)) out = *v;
  };
  auto optional_flag = [&](const char* key, std::optional<bool>& out) {
    if (const auto v = f.optional_bool(key)) out = *v;
  };
  auto number = [&](const char* key, double& out, double lo, double hi) {
    if (const auto v = f.optional_number(key, lo, hi)) out = *v;
  };
  flag("flash_attention", run.flash_attention);
  optional_flag("attention_dropout", o.attention_dropout);
  optional_flag("hidden_dropout", o.hidden_dropout);
  optional_flag("embedding_dropout", o.embedding_dropout);
  number("beta_a", o.beta_a, 0.5, 8);
  number("beta_n", o.beta_n, 0.5, 8);
  number("beta_sm", o.beta_sm, 0.5, 8);
  number("beta_lse", o.beta_lse, 0, 64);
  flag("softmax_cast", o.softmax_cast);
  flag("fused_swiglu", o.fused_swiglu);
  flag("eager_rope", o.eager_rope);
  if (const auto mode = f.optional_string("moe_mode")) {
    if (*mode == "dropless")
      o.moe_mode = MoeMode::dropless;
    else if (*mode == "capacity")
      o.moe_mode = MoeMode::capacity;
    else
      f.fail("moe_mode", "expected dropless or capacity, got '" + *mode + "'");
  }
  number("capacity_factor", o.capacity_factor, 1e-3, 64);
  number("moe_imbalance", o.moe_imbalance, 1, 64);
  number("logits_kept_bytes", o.logits_kept_bytes, 0, 64);
  number("loss_transient_bytes", o.loss_transient_bytes, 0, 64);
  number("loss_parallel_transient_bytes", o.loss_parallel_transient_bytes, 0, 64);
  flag("output_saves_gathered_input", o.output_saves_gathered_input);
  number("loss_chunks", o.loss_chunks, 1, 1e6);
  flag("vocab_parallel_loss", o.vocab_parallel_loss);
  if (const auto q = f.optional_int("vocab_pad_multiple")) run.profile.vocab_pad_multiple = *q;
  if (const auto r = f.optional_string("reshard_after_forward")) {
    if (*r == "true")
      run.profile.reshard_after_forward = ReshardAfterForward::on;
    else if (*r == "false")
      run.profile.reshard_after_forward = ReshardAfterForward::off;
    else if (*r == "auto")
      run.profile.reshard_after_forward = ReshardAfterForward::automatic;
    else
      f.fail("reshard_after_forward", "expected true, false or auto, got '" + *r + "'");
  }
  if (const auto n = f.optional_int("fsdp_prefetch_layers", 0)) o.fsdp_prefetch_layers = *n;
  flag("overlap_grad_reduce", o.overlap_grad_reduce);
  if (const auto dispatch = f.optional_string("ep_dispatcher")) {
    if (*dispatch == "alltoall")
      o.ep_dispatch = EpDispatch::all_to_all;
    else if (*dispatch == "deepep" || *dispatch == "hybridep")
      o.ep_dispatch = EpDispatch::node_dedup;
    else
      f.fail("ep_dispatcher", "expected alltoall, deepep or hybridep, got '" + *dispatch + "'");
  }
  number("tp_overlap", o.tp_overlap, 0, 1);
  number("ep_overlap", o.ep_overlap, 0, 1);
  flag("cp_overlap", o.cp_overlap);
  flag("pp_overlap", o.pp_overlap);
  flag("dualpipe_overlap", o.dualpipe_overlap);
  flag("dp_overlap", o.dp_overlap);
  flag("mla_cp_latent", o.mla_cp_latent);
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
  if (const auto model = f.optional_string("latency_model")) {
    if (*model != "ring" && *model != "tree") f.fail("latency_model", "expected ring or tree, got '" + *model + "'");
    o.latency_tree = *model == "tree";
  }
  // Re-read precision overrides first: bucket sizes in bytes convert with them.
  number("beta_P", p.beta_P, 0, 16);
  number("beta_G", p.beta_G, 0, 16);
  number("beta_master", p.beta_master, 0, 16);
  number("beta_state", p.beta_state, 0, 16);
  number("beta_gather", p.beta_gather, 0, 16);
  number("beta_red", p.beta_red, 0, 16);
  number("beta_gcomm", p.beta_gcomm, 0, 16);
  if (const auto b = f.optional_number("grad_bucket_bytes", 0, kMax)) {
    run.profile.grad_bucket_elements = p.beta_G > 0 ? *b / p.beta_G : 0;
  }
  if (const auto b = f.optional_number("allgather_bucket_bytes", 0, kMax)) {
    run.profile.allgather_bucket_elements = p.beta_P > 0 ? *b / p.beta_P : 0;
  }
  number("optimizer_step_temp_bytes_per_param", o.optimizer_step_temp_bytes_per_param, 0, 64);
  flag("grad_clip", o.grad_clip);
  if (const auto model = f.optional_string("grad_clip_model")) {
    if (*model != "none" && *model != "seed") f.fail("grad_clip_model", "expected none or seed, got '" + *model + "'");
    o.grad_clip_seed = *model == "seed";
  }
  number("token_id_bytes", o.token_id_bytes, 0, 16);
  if (f.has("recompute_switches"))
    apply_recompute_switches(f.raw("recompute_switches"), source, f.path("recompute_switches"), run);
  if (const auto rest = f.optional_string("recompute_rest")) {
    if (*rest == "none")
      o.recompute_rest = Recompute::none;
    else if (*rest == "selective")
      o.recompute_rest = Recompute::selective;
    else
      f.fail("recompute_rest", "expected none or selective, got '" + *rest + "'");
  }
  flag("offload_optimizer", o.offload_optimizer);
  if (f.has("layers_per_vstage")) o.layers_per_vstage = f.int_list("layers_per_vstage", 0);
  if (f.has("full_layers_per_vstage")) o.full_layers_per_vstage = f.int_list("full_layers_per_vstage", 0);
  if (const auto n = f.optional_int("layers_first_stage")) o.layers_first_stage = *n;
  if (const auto n = f.optional_int("layers_last_stage")) o.layers_last_stage = *n;
  flag("account_embedding", o.account_embedding);
  flag("account_loss", o.account_loss);
  number("fp8_weight_cache_bytes", o.fp8_weight_cache_bytes, 0, 8);
  flag("fp8_saved_matmul_inputs", o.fp8_saved_matmul_inputs);
  if (f.optional_bool("fp8_allgather").value_or(false)) p.beta_gather = 1;
  optional_flag("defer_grad_sync", o.defer_grad_sync);
  flag("torch_compile", o.torch_compile);
  flag("fp8_linears", o.fp8_linears);
  if (const auto scaling = f.optional_string("fp8_scaling")) {
    if (*scaling == "tensorwise")
      o.fp8_scaling = Fp8Scaling::tensorwise;
    else if (*scaling == "rowwise")
      o.fp8_scaling = Fp8Scaling::rowwise;
    else
      f.fail("fp8_scaling", "expected tensorwise or rowwise, got " + quoted_text(*scaling));
  }
}

}  // namespace meshfit
