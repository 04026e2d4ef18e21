#include "engine/run_config.hpp"

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/presets.hpp"
#include "engine/run_options_config.hpp"
#include "engine/yaml_fields.hpp"
#include "estimators/fp8_weight_copies.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// --rules default | sapp-nd[:-NAME,-NAME...]: the profile, and the SAPP-ND conventions switched
// off (estimators/seed_conventions.hpp; cli.md).
void apply_rules(const std::string& text, const InputOrigin& origin, Run& run) {
  const std::size_t colon = text.find(':');
  const std::string profile = text.substr(0, colon);
  if (profile == "default" && colon == std::string::npos) {
    run.rules = Rules::standard;
    return;
  }
  if (profile != "sapp-nd") {
    throw InputError(origin.source, origin.field("--rules"),
                     "expected default, sapp-nd or sapp-nd:-CONVENTION,..., got " + quoted_text(text));
  }
  run.rules = Rules::sapp_nd;
  run.seed_off = 0;
  if (colon == std::string::npos) return;
  std::string names;
  for (std::size_t i = 0; i < kSeedConventionCount; ++i)
    names += (i ? ", " : "") + std::string(kSeedConventionNames[i]);
  std::size_t at = colon + 1;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto found = item.size() > 1 && item[0] == '-' ? seed_convention_named(item.substr(1)) : std::nullopt;
    if (!found) {
      throw InputError(origin.source, origin.field("--rules"),
                       "expected -NAME with NAME one of " + names + ", got " + quoted_text(item));
    }
    run.seed_off |= 1U << static_cast<unsigned>(*found);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
}

}  // namespace

FrameworkProfile load_framework_profile(const std::string& name, const InputOrigin& origin) {
  const auto preset = find_preset("frameworks", name);
  if (!preset) {
    throw InputError(origin.source, origin.field("--framework"),
                     "expected one of " + name_list(preset_names("frameworks")) + ", got " + quoted_text(name));
  }
  const Fields f(parse_yaml_text(std::string(preset->content), preset->source), preset->source);
  FrameworkProfile p;
  const std::string fw = *f.optional_string("name");
  p.framework = fw == "torchtitan"  ? Framework::torchtitan
                : fw == "deepspeed" ? Framework::deepspeed
                                    : Framework::megatron;
  p.precision_preset = *f.optional_string("precision");
  p.vocab_pad_multiple = *f.optional_int("vocab_pad_multiple");
  const std::string reshard = *f.optional_string("reshard_after_forward");
  p.reshard_after_forward = reshard == "auto"    ? ReshardAfterForward::automatic
                            : reshard == "false" ? ReshardAfterForward::off
                                                 : ReshardAfterForward::on;
  p.grad_bucket_elements = *f.optional_number("grad_bucket_elements", 0, 1e15);
  p.allgather_bucket_elements = *f.optional_number("allgather_bucket_elements", 0, 1e15);
  const std::string expert_rule = *f.optional_string("expert_rule");
  if (expert_rule != "megatron" && expert_rule != "torchtitan") f.fail("expert_rule", "megatron or torchtitan");
  p.expert_rule = expert_rule == "torchtitan" ? ExpertRule::torchtitan : ExpertRule::megatron;
  p.eta_fw = *f.optional_number("eta_fw", 1e-6, 10);
  if (const auto by = f.optional_map("eta_fw_by_generation"))
    for (const std::string& g : by->keys()) {
      const auto eta = by->optional_number(g, 1e-3, 10);
      if (!eta) by->fail(g, "a number in [0.001, 10]");
      p.eta_fw_by_generation.emplace_back(g, *eta);
    }
  p.account_embedding = f.optional_bool("account_embedding").value_or(false);
  p.account_loss = f.optional_bool("account_loss").value_or(false);
  p.loss_transient_bytes = f.optional_number("loss_transient_bytes", 0, 64).value_or(6);
  p.loss_parallel_transient_bytes =
      f.optional_number("loss_parallel_transient_bytes", 0, 64).value_or(p.loss_transient_bytes);
  p.output_saves_gathered_input = f.optional_bool("output_saves_gathered_input").value_or(false);
  p.fsdp_root_and_last_block_unsharded = f.optional_bool("fsdp_root_and_last_block_unsharded").value_or(false);
  p.fsdp_output_group_unsharded = f.optional_bool("fsdp_output_group_unsharded").value_or(false);
  p.grads_freed_before_step = f.optional_bool("grads_freed_before_step").value_or(false);
  p.eta_core = f.optional_number("eta_core", 1e-3, 10).value_or(1);
  p.cp_core_scale = f.optional_number("cp_core_scale", 1e-3, 10).value_or(1);
  p.elementwise = f.optional_bool("elementwise").value_or(false);
  const std::string routing = f.optional_string("moe_routing").value_or("none");
  if (routing != "none" && routing != "megatron" && routing != "torchtitan")
    f.fail("moe_routing", "none, megatron or torchtitan");
  p.moe_routing = routing == "megatron"     ? MoeRouting::megatron
                  : routing == "torchtitan" ? MoeRouting::torchtitan
                                            : MoeRouting::none;
  p.eager_elementwise_passes = f.optional_number("eager_elementwise_passes", 0, 100).value_or(1);
  p.compiled_elementwise_passes = f.optional_number("compiled_elementwise_passes", 0, 100).value_or(1);
  p.loss_bytes_forward = f.optional_number("loss_bytes_forward", 0, 1000).value_or(0);
  p.loss_bytes_backward = f.optional_number("loss_bytes_backward", 0, 1000).value_or(0);
  p.loss_parallel_bytes_forward =
      f.optional_number("loss_parallel_bytes_forward", 0, 1000).value_or(p.loss_bytes_forward);
  p.loss_parallel_bytes_backward =
      f.optional_number("loss_parallel_bytes_backward", 0, 1000).value_or(p.loss_bytes_backward);
  p.unfused_score_bytes_forward = f.optional_number("unfused_score_bytes_forward", 0, 1000).value_or(0);
  p.unfused_score_bytes_backward = f.optional_number("unfused_score_bytes_backward", 0, 1000).value_or(0);
  p.fp8_gemm_speedup = f.optional_number("fp8_gemm_speedup", 1e-3, 10).value_or(1);
  const std::string fp8_casts = f.optional_string("fp8_casts").value_or("none");
  if (fp8_casts != "none" && fp8_casts != "torchao") f.fail("fp8_casts", "none or torchao");
  p.fp8_casts = fp8_casts == "torchao" ? Fp8Casts::torchao : Fp8Casts::none;
  p.tp_overlap_efficiency = f.optional_number("tp_overlap_efficiency", 0, 1).value_or(1);
  p.host_launch_time = f.optional_number("host_launch_time", 0, 1).value_or(0);
  p.host_expert_launch_time = f.optional_number("host_expert_launch_time", 0, 1).value_or(p.host_launch_time);
  p.host_op_launch_time = f.optional_number("host_op_launch_time", 0, 1).value_or(p.host_launch_time);
  p.ep_overlap_share = f.optional_number("ep_overlap_share", 0, 1).value_or(1);
  p.interleaved_p2p_overlap = f.optional_bool("interleaved_p2p_overlap").value_or(false);
  p.recompute_switches = f.optional_string("recompute_switches").value_or("");
  p.step_casts_grads_to_fp32 = f.optional_bool("step_casts_grads_to_fp32").value_or(false);
  p.fused_swiglu = f.optional_bool("fused_swiglu").value_or(true);
  p.moe_fp32_combine = f.optional_bool("moe_fp32_combine").value_or(false);
  p.attention_checkpoint_keeps_qkv_output = f.optional_bool("attention_checkpoint_keeps_qkv_output").value_or(false);
  p.te_fp8_weight_copies = f.optional_bool("te_fp8_weight_copies").value_or(false);
  // A profile that does not price rowwise scaling on its own prices it as tensorwise.
  p.fp8_rowwise_gemm_speedup = f.optional_number("fp8_rowwise_gemm_speedup", 1e-3, 10).value_or(p.fp8_gemm_speedup);
  // Nor MXFP8: its block-scaled GEMMs run at the FP8 peak, which is 2x bf16 on Hopper and
  // Blackwell alike (NVIDIA's datasheets), the ratio the tensorwise speedup stands for.
  p.fp8_mxfp8_gemm_speedup = f.optional_number("fp8_mxfp8_gemm_speedup", 1e-3, 10).value_or(p.fp8_gemm_speedup);
  return p;
}

Precision load_precision(const std::string& name, const InputOrigin& origin) {
  const YAML::Node all = parse_yaml_text(std::string(data_file("precisions.yaml")), "preset:precisions.yaml");
  std::vector<std::string> names;
  for (const auto& kv : all) names.push_back(kv.first.Scalar());
  const YAML::Node node = all[name];
  if (!node.IsDefined()) {
    throw InputError(origin.source, origin.field("--precision"),
                     "expected one of " + name_list(names) + ", got " + quoted_text(name));
  }
  const Fields f(node, "preset:precisions.yaml", name);
  Precision p;
  p.preset = name;
  p.beta_P = *f.optional_number("beta_P", 0, 16);
  p.beta_G = *f.optional_number("beta_G", 0, 16);
  p.beta_master = *f.optional_number("beta_master", 0, 16);
  p.beta_state = *f.optional_number("beta_state", 0, 16);
  p.beta_gather = *f.optional_number("beta_gather", 0, 16);
  p.beta_red = *f.optional_number("beta_red", 0, 16);
  p.beta_gcomm = *f.optional_number("beta_gcomm", 0, 16);
  return p;
}

Run make_run(const RunFlags& flags, bool need_batch, const InputOrigin& origin) {
  const std::string& source = origin.source;
  Run run;
  // Sequence length and batch sizes up to 2^24 (16,777,216): far beyond any training run's, and
  // low enough that tokens per step (gb·s) and every product of them with a parallel degree stay
  // within 64-bit integers.
  constexpr std::int64_t kMax = std::int64_t{1} << 24;
  auto positive = [&](const std::optional<std::int64_t>& v, const char* field, bool required) -> std::int64_t {
    if (!v) {
      if (required) throw InputError(source, origin.field(field), "missing; expected a positive integer");
      return 0;
    }
    if (*v < 1) throw InputError(source, origin.field(field), "expected a positive integer, got " + std::to_string(*v));
    if (*v > kMax)
      throw InputError(source, origin.field(field),
                       "expected at most " + std::to_string(kMax) + ", got " + std::to_string(*v));
    return *v;
  };
  run.seq = positive(flags.seq, "--seq", need_batch);
  run.global_batch = positive(flags.global_batch, "--global-batch", need_batch);
  run.micro_batch = positive(flags.micro_batch, "--micro-batch", false);
  if (run.micro_batch > 0 && run.global_batch > 0 && run.global_batch % run.micro_batch != 0) {
    throw InputError(origin.source, origin.field("--micro-batch"),
                     "expected a divisor of --global-batch " + std::to_string(run.global_batch) + ", got " +
                         std::to_string(run.micro_batch));
  }

  run.profile = load_framework_profile(flags.framework, origin);
  run.precision = load_precision(flags.precision.value_or(run.profile.precision_preset), origin);
  if (flags.grad_bytes) {
    if (*flags.grad_bytes != 2 && *flags.grad_bytes != 4) {
      throw InputError(origin.source, origin.field("--grad-bytes"),
                       "expected 2 or 4, got " + std::to_string(*flags.grad_bytes));
    }
    run.precision.beta_G = static_cast<double>(*flags.grad_bytes);
  }

  const std::string& opt = flags.optimizer;
  if (opt == "adamw")
    run.optimizer = Optimizer::adamw;
  else if (opt == "sgd_momentum" || opt == "sgd")
    run.optimizer = Optimizer::sgd_momentum;
  else if (opt == "muon")
    run.optimizer = Optimizer::muon;
  else if (opt == "adafactor")
    run.optimizer = Optimizer::adafactor;
  else
    throw InputError(origin.source, origin.field("--optimizer"),
                     "expected adamw, sgd_momentum, muon or adafactor, got " + quoted_text(opt));

  apply_rules(flags.rules, origin, run);

  run.flash_attention = !flags.no_flash_attention;
  run.options.account_embedding = run.profile.account_embedding;
  run.options.account_loss = run.profile.account_loss;
  run.options.loss_transient_bytes = run.profile.loss_transient_bytes;
  run.options.loss_parallel_transient_bytes = run.profile.loss_parallel_transient_bytes;
  run.options.output_saves_gathered_input = run.profile.output_saves_gathered_input;
  run.options.fused_swiglu = run.profile.fused_swiglu;
  // The framework's selective recompute (torchtitan's per-op SAC), before the run options and
  // --recompute-switches, which override it.
  if (!run.profile.recompute_switches.empty()) {
    apply_recompute_switches(YAML::Node(run.profile.recompute_switches), origin.source, origin.field("--framework"),
                             run);
  }
  if (flags.run_options_file) {
    apply_run_options(load_yaml_file(*flags.run_options_file), *flags.run_options_file, run);
  }
  if (flags.recompute_switches) {
    apply_recompute_switches(YAML::Node(*flags.recompute_switches), source, origin.field("--recompute-switches"), run);
  }
  if (flags.no_flash_attention) run.flash_attention = false;
  return run;
}

void resolve_device_facts(Run& run, const Device& device) {
  RunOptions& o = run.options;
  const bool framework_copies = o.fp8_linears && run.profile.te_fp8_weight_copies;
  o.fp8_weight_bytes =
      o.fp8_weight_cache_bytes.value_or(framework_copies ? te_fp8_weight_bytes(o.fp8_scaling, device) : 0);
}

}  // namespace meshfit
