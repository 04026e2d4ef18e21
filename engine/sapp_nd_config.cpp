#include "engine/sapp_nd_config.hpp"

#include <cctype>
#include <numeric>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

// What both formats state, in SAPP-ND's own terms (its _CostModVar), before meshfit's.
struct Stated {
  std::string name;
  std::int64_t h = 0, layers = 0, heads = 0, kv_heads = 0, vocab = 0, ffn = 0;
  std::int64_t q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v_head = 0;
  std::int64_t experts = 0, top_k = 1, shared = 0, moe_ffn = 0, first_dense = 0, mtp = 0;
  bool mtp_in_offset = true;  // mtp_depth counts the MTP depths among the offset's slots
  bool tie = false;
  std::int64_t seq = 0, mbs = 1, m = 1, dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  std::optional<std::int64_t> etp;  // expert_model_parallel, when the file states it
  bool sp = false, has_op = false, grad_shard = false;
  std::optional<std::int64_t> os_shard;  // optimizer_weight_shard_size
  std::string cp_algo = "colossalai_cp";
  YAML::Node recompute, offset;
  std::string recompute_field, offset_field;
  bool select_recompute = false;
  std::int64_t bytes_p = 0, bytes_compute = 2, bytes_softmax = 0, bytes_norm = 4;
  bool clip = false, flash = true, gmm = false;
  double capacity_factor = 1;
  std::optional<std::string> max_memory;
  std::string memory_field;
  // Where the file states dp, tp, pp, cp, ep, vpp, the optimizer shard, batch size and count.
  std::vector<std::string> fields;
};

// SAPP-ND's CostModelConfig.fp_bytes: the first number in a dtype name, in bits, over 8.
std::optional<std::int64_t> dtype_bytes(const Fields& f, const std::string& key) {
  const auto text = f.optional_string(key);
  if (!text) return std::nullopt;
  std::size_t i = 0;
  while (i < text->size() && std::isdigit(static_cast<unsigned char>((*text)[i])) == 0) ++i;
  std::size_t j = i;
  while (j < text->size() && std::isdigit(static_cast<unsigned char>((*text)[j])) != 0) ++j;
  const auto bits = j > i ? parse_integer(text->substr(i, j - i)) : std::nullopt;
  if (!bits || *bits < 8 || *bits % 8 != 0 || *bits > 64) {
    f.fail(key, "a dtype name with its width in bits (float32, bfloat16, float16), got " + quoted_text(*text));
  }
  return *bits / 8;
}

std::int64_t first_int(const Fields& f, std::initializer_list<const char*> keys, std::int64_t min,
                       std::optional<std::int64_t> fallback) {
  for (const char* k : keys) {
    if (const auto v = f.optional_int(k, min)) return *v;
  }
  if (fallback) return *fallback;
  f.fail(*keys.begin(), "missing; expected an integer");
}

Fields required_map(const Fields& f, const std::string& key, const std::string& what) {
  const auto m = f.optional_map(key);
  if (!m) f.fail(key, "missing; expected a map (" + what + ")");
  return *m;
}

// CostModelParserMindformers: model.model_config, moe_config, parallel_config, parallel,
// runner_config, recompute_config, runner_wrapper, context.
Stated read_mindformers(const Fields& root) {
  Stated s;
  const Fields pc = required_map(root, "parallel_config", "MindFormers' data_parallel, model_parallel, ...");
  const Fields model = required_map(root, "model", "model.model_config");
  const Fields mc = required_map(model, "model_config", "hidden_size, num_layers, ...");
  if (const auto trainer = root.optional_map("trainer")) s.name = trainer->optional_string("model_name").value_or("");
  s.h = mc.required_int("hidden_size");
  s.layers = first_int(mc, {"num_layers", "num_hidden_layers"}, 1, std::nullopt);
  s.heads = first_int(mc, {"num_heads", "num_attention_heads"}, 1, std::nullopt);
  s.kv_heads = first_int(mc, {"n_kv_heads", "num_key_value_heads"}, 1, s.heads);
  s.vocab = mc.required_int("vocab_size");
  s.ffn = mc.required_int("intermediate_size");
  s.seq = mc.required_int("seq_length");
  s.kv_lora = mc.optional_int("kv_lora_rank", 0).value_or(0);
  s.q_lora = mc.optional_int("q_lora_rank", 0).value_or(0);
  s.rope = mc.optional_int("qk_rope_head_dim", 0).value_or(0);
  s.nope = mc.optional_int("qk_nope_head_dim", 0).value_or(0);
  s.v_head = mc.optional_int("v_head_dim", 0).value_or(0);
  s.tie = mc.optional_bool("tie_word_embeddings").value_or(false);
  if (const auto d = mc.optional_int("mtp_depth", 0); d && *d > 0) {
    s.mtp = *d;
  } else {
    s.mtp = mc.optional_int("num_nextn_predict_layers", 0).value_or(0);
    s.mtp_in_offset = false;  // CostModelParserMindformers: is_mtp_in_offset only with mtp_depth
  }
  s.vpp = mc.optional_int("pp_interleave_num", 1).value_or(1);
  s.flash = mc.optional_bool("use_flash_attention").value_or(true);
  s.bytes_p = dtype_bytes(mc, "param_init_type").value_or(0);
  if (s.bytes_p == 0) s.bytes_p = dtype_bytes(mc, "params_dtype").value_or(0);
  if (s.bytes_p == 0) mc.fail("param_init_type", "missing; expected the parameters' dtype (e.g. float32)");
  const auto compute = dtype_bytes(mc, "compute_dtype");
  if (!compute) mc.fail("compute_dtype", "missing; expected the activations' dtype (e.g. bfloat16)");
  s.bytes_compute = *compute;
  s.bytes_softmax = dtype_bytes(mc, "softmax_compute_type").value_or(0);
  if (s.bytes_softmax == 0) s.bytes_softmax = dtype_bytes(mc, "softmax_compute_dtype").value_or(s.bytes_compute);
  s.bytes_norm = dtype_bytes(mc, "layernorm_compute_type").value_or(4);
  if (mc.has("offset")) s.offset = mc.raw("offset");  // a missing key's node may not be copied
  s.offset_field = mc.path("offset");
  if (const auto moe = root.optional_map("moe_config")) {
    s.experts = moe->optional_int("expert_num", 1).value_or(1);
    s.top_k = moe->optional_int("num_experts_chosen", 1).value_or(1);
    s.shared = moe->optional_int("shared_expert_num", 0).value_or(0);
    s.moe_ffn = moe->optional_int("moe_intermediate_size", 1).value_or(s.ffn);
    s.first_dense = moe->optional_int("first_k_dense_replace", 0).value_or(0);
    if (const auto cf = moe->optional_number("capacity_factor", 0, 1e6)) s.capacity_factor = std::max(1.0, *cf);
    s.etp = moe->optional_int("expert_model_parallel", 1);
    s.gmm = moe->optional_bool("use_gmm").value_or(false);
  } else {
    s.experts = mc.optional_int("n_routed_experts", 0).value_or(0);
    s.top_k = mc.optional_int("num_experts_per_tok", 1).value_or(1);
    s.shared = mc.optional_int("n_shared_experts", 0).value_or(0);
    s.moe_ffn = mc.optional_int("moe_intermediate_size", 1).value_or(s.ffn);
    s.first_dense = mc.optional_int("first_k_dense_replace", 0).value_or(0);
    s.gmm = mc.optional_bool("moe_grouped_gemm").value_or(false);
  }
  s.fields = {pc.path("data_parallel"),
              pc.path("model_parallel"),
              pc.path("pipeline_stage"),
              pc.path("context_parallel"),
              pc.path("expert_parallel"),
              mc.path("pp_interleave_num"),
              "parallel.parallel_optimizer_config.optimizer_weight_shard_size",
              "runner_config.batch_size",
              pc.path("micro_batch_num"),
              mc.path("num_layers"),
              mc.path("mtp_depth")};
  s.dp = pc.optional_int("data_parallel").value_or(1);
  s.tp = pc.optional_int("model_parallel").value_or(1);
  s.pp = pc.optional_int("pipeline_stage").value_or(1);
  s.cp = pc.optional_int("context_parallel").value_or(1);
  s.ep = pc.optional_int("expert_parallel").value_or(1);
  s.m = pc.required_int("micro_batch_num");
  s.sp = pc.optional_bool("use_seq_parallel").value_or(false);
  s.cp_algo = pc.optional_string("context_parallel_algo").value_or("colossalai_cp");
  if (const auto par = root.optional_map("parallel")) {
    s.has_op = par->optional_bool("enable_parallel_optimizer").value_or(false);
    if (const auto op = par->optional_map("parallel_optimizer_config")) {
      s.grad_shard = op->optional_bool("gradient_accumulation_shard").value_or(false);
      s.os_shard = op->optional_int("optimizer_weight_shard_size", 1);
    }
  }
  if (const auto runner = root.optional_map("runner_config")) s.mbs = runner->optional_int("batch_size").value_or(1);
  if (const auto rc = root.optional_map("recompute_config")) {
    if (rc->has("recompute")) s.recompute = rc->raw("recompute");
    s.recompute_field = rc->path("recompute");
    s.select_recompute = rc->optional_bool("select_recompute").value_or(false);
  }
  if (const auto wrapper = root.optional_map("runner_wrapper")) {
    s.clip = wrapper->optional_bool("use_clip_grad").value_or(false);
  }
  if (const auto ctx = root.optional_map("context")) {
    s.max_memory = ctx->optional_string("max_device_memory");
    s.memory_field = ctx->path("max_device_memory");
  }
  return s;
}

// The HyperParallel YAML of SAPP-ND's nd/yamls (hyper_deepseek_v3.yaml): model.config_overrides
// in Hugging Face names, data.max_seq_len, train.accelerator and train.gradient_checkpointing.
Stated read_hyperparallel(const Fields& root) {
  Stated s;
  const Fields model = required_map(root, "model", "name, dtypes, config_overrides");
  const Fields co = required_map(model, "config_overrides", "the model's dims");
  const Fields train = required_map(root, "train", "batch sizes, accelerator");
  const Fields acc = required_map(train, "accelerator", "dp_replicate, tp_degree, ...");
  s.name = model.optional_string("name").value_or("");
  s.h = co.required_int("hidden_size");
  s.layers = co.required_int("num_hidden_layers");
  s.heads = co.required_int("num_attention_heads");
  s.kv_heads = co.optional_int("num_key_value_heads").value_or(s.heads);
  s.vocab = co.required_int("vocab_size");
  s.ffn = co.required_int("intermediate_size");
  s.kv_lora = co.optional_int("kv_lora_rank", 0).value_or(0);
  s.q_lora = co.optional_int("q_lora_rank", 0).value_or(0);
  s.rope = co.optional_int("qk_rope_head_dim", 0).value_or(0);
  s.nope = co.optional_int("qk_nope_head_dim", 0).value_or(0);
  s.v_head = co.optional_int("v_head_dim", 0).value_or(0);
  s.experts = co.optional_int("num_experts", 0).value_or(0);
  s.top_k = co.optional_int("num_experts_per_tok", 1).value_or(1);
  s.shared = co.optional_int("num_shared_experts", 0).value_or(0);
  s.moe_ffn = co.optional_int("moe_intermediate_size", 1).value_or(s.ffn);
  s.first_dense = co.optional_int("first_k_dense_replace", 0).value_or(0);
  s.mtp = co.optional_int("mtp_depth", 0).value_or(0);
  s.tie = co.optional_bool("tie_word_embeddings").value_or(false);
  if (const auto cf = co.optional_number("capacity_factor", 0, 1e6)) s.capacity_factor = std::max(1.0, *cf);
  if (co.has("offset")) s.offset = co.raw("offset");
  s.offset_field = co.path("offset");
  s.bytes_p = dtype_bytes(model, "param_init_type").value_or(4);
  s.bytes_compute = dtype_bytes(model, "compute_dtype").value_or(2);
  s.bytes_softmax = dtype_bytes(model, "softmax_compute_type").value_or(s.bytes_compute);
  const auto data = root.optional_map("data");
  if (!data) root.fail("data", "missing; expected a map with max_seq_len");
  s.seq = data->required_int("max_seq_len");
  s.mbs = train.optional_int("micro_batch_size").value_or(1);
  s.m = train.required_int("micro_batch_num");
  const std::int64_t replicate = acc.optional_int("dp_replicate").value_or(1);
  const std::int64_t shard = acc.optional_int("dp_shard").value_or(1);
  if (replicate > (std::int64_t{1} << 24) || shard > (std::int64_t{1} << 24)) {
    acc.fail(replicate > shard ? "dp_replicate" : "dp_shard", "at most 16777216 (the devices meshfit takes)");
  }
  s.dp = replicate * shard;
  s.fields = {acc.path("dp_replicate"),
              acc.path("tp_degree"),
              acc.path("pipeline_parallel_degree"),
              acc.path("cp_degree"),
              acc.path("expert_parallel_degree"),
              "",
              acc.path("optimizer_weight_shard_size"),
              train.path("micro_batch_size"),
              train.path("micro_batch_num"),
              co.path("num_hidden_layers"),
              co.path("mtp_depth")};
  s.tp = acc.optional_int("tp_degree").value_or(1);
  s.pp = acc.optional_int("pipeline_parallel_degree").value_or(1);
  s.cp = acc.optional_int("cp_degree").value_or(1);
  s.ep = acc.optional_int("expert_parallel_degree").value_or(1);
  s.etp = acc.optional_int("expert_tensor_parallel_degree", 1);
  s.sp = acc.optional_bool("use_seq_parallel").value_or(false);
  s.has_op = acc.optional_bool("enable_parallel_optimizer").value_or(false);
  s.os_shard = acc.optional_int("optimizer_weight_shard_size", 1);
  if (const auto opt = train.optional_map("optimizer")) {
    s.clip = opt->optional_number("max_grad_norm", 0, 1e30).value_or(0) > 0;
  }
  if (const auto gc = train.optional_map("gradient_checkpointing")) {
    const std::string mode = gc->optional_string("activation_checkpoint").value_or("none");
    if (mode != "full" && mode != "selective" && mode != "none") {
      gc->fail("activation_checkpoint", "full, selective or none, got " + quoted_text(mode));
    }
    s.recompute = YAML::Node(mode == "full");
    s.recompute_field = gc->path("activation_checkpoint");
    s.select_recompute = mode == "selective";
  }
  if (const auto ctx = root.optional_map("context")) {
    s.max_memory = ctx->optional_string("max_device_memory");
    s.memory_field = ctx->path("max_device_memory");
  }
  return s;
}

// The body layers of each stage: SAPP-ND's slots, ⌊slots/pp⌋ + offset[i] (its PartitionGenerator
// over n_lay layers and, when the offset counts them, the MTP depths), less the MTP depths,
// which meshfit places on the head stage. Empty: meshfit's own even split.
std::vector<std::int64_t> stage_layers(const Stated& s, const std::string& source) {
  if (s.pp == 1 || !s.offset || s.offset.IsNull()) return {};
  const std::int64_t slots = s.layers + (s.mtp_in_offset ? s.mtp : 0);
  std::vector<std::int64_t> off(static_cast<std::size_t>(s.pp), 0);
  if (s.offset.IsScalar()) {
    const auto v = parse_integer(s.offset.Scalar());
    if (!v) throw InputError(source, s.offset_field, "an integer or a list of pp integers");
    if (*v == 0 && slots % s.pp == 0 && !s.mtp_in_offset) return {};
    if (*v < -slots || *v > slots) {
      throw InputError(source, s.offset_field, "an offset within ±" + std::to_string(slots) + " (the layer slots)");
    }
    std::fill(off.begin(), off.end(), *v);
  } else if (s.offset.IsSequence() && static_cast<std::int64_t>(s.offset.size()) == s.pp) {
    for (std::size_t i = 0; i < off.size(); ++i) {
      const YAML::Node item = s.offset[i];
      const auto v = item.IsScalar() ? parse_integer(item.Scalar()) : std::nullopt;
      if (!v) {
        throw InputError(source, s.offset_field + "[" + std::to_string(i) + "]",
                         "an integer (per-chunk offsets of pp_interleave_num > 1 are not read)");
      }
      off[i] = *v;
    }
    for (std::size_t i = 0; i < off.size(); ++i) {
      if (off[i] < -slots || off[i] > slots) {
        throw InputError(source, s.offset_field + "[" + std::to_string(i) + "]",
                         "an offset within ±" + std::to_string(slots) + " (the layer slots)");
      }
    }
  } else {
    throw InputError(source, s.offset_field, "an integer or a list of " + std::to_string(s.pp) + " integers (pp)");
  }
  std::vector<std::int64_t> per(off.size());
  for (std::size_t i = 0; i < off.size(); ++i) per[i] = slots / s.pp + off[i];
  const std::int64_t sum = std::accumulate(per.begin(), per.end(), std::int64_t{0});
  if (sum != slots) {
    throw InputError(source, s.offset_field,
                     "offsets that spread the " + std::to_string(slots) + " layer slots over " + std::to_string(s.pp) +
                         " stages (" + std::to_string(slots / s.pp) + " each plus the offset), got " +
                         std::to_string(sum));
  }
  if (s.mtp_in_offset) per.back() -= s.mtp;
  for (std::size_t i = 0; i < per.size(); ++i) {
    if (per[i] < 0) throw InputError(source, s.offset_field, "no stage with fewer than 0 layers");
  }
  return per;
}

std::string join(const std::vector<std::string>& kv) {
  std::string text;
  for (const auto& item : kv) text += (text.empty() ? "" : ",") + item;
  return text;
}

YAML::Node model_node(const Stated& s, const std::string& source) {
  YAML::Node n;
  n["name"] = s.name.empty() ? "sapp-nd-model" : s.name;
  n["hidden_size"] = s.h;
  n["num_hidden_layers"] = s.layers;
  n["num_attention_heads"] = s.heads;
  n["num_key_value_heads"] = s.kv_heads;
  n["vocab_size"] = s.vocab;
  n["tie_word_embeddings"] = s.tie;
  if (s.kv_lora > 0) {  // MLA: DeepSeek-V3's family
    n["model_type"] = "deepseek_v3";
    n["intermediate_size"] = s.ffn;
    n["q_lora_rank"] = s.q_lora;
    n["kv_lora_rank"] = s.kv_lora;
    n["qk_rope_head_dim"] = s.rope;
    n["qk_nope_head_dim"] = s.nope > 0 ? s.nope : s.h / s.heads;
    n["v_head_dim"] = s.v_head > 0 ? s.v_head : s.h / s.heads;
    n["n_routed_experts"] = s.experts > 1 ? s.experts : 0;
    n["num_experts_per_tok"] = s.top_k;
    n["n_shared_experts"] = s.shared;
    n["moe_intermediate_size"] = s.moe_ffn;
    n["first_k_dense_replace"] = s.experts > 1 ? s.first_dense : s.layers;
    n["moe_layer_freq"] = 1;
    n["num_nextn_predict_layers"] = s.mtp;
    return n;
  }
  if (s.mtp > 0) throw InputError(source, "mtp_depth", "0 for a model without MLA (meshfit reads MTP with DeepSeek's)");
  if (s.experts > 1) {
    if (s.shared > 0 || s.first_dense > 0) {
      throw InputError(source, "moe_config",
                       "no shared experts or leading dense layers without MLA (meshfit reads such a model as Mixtral)");
    }
    n["model_type"] = "mixtral";
    n["intermediate_size"] = s.moe_ffn;
    n["num_local_experts"] = s.experts;
    n["num_experts_per_tok"] = s.top_k;
    return n;
  }
  n["model_type"] = "llama";
  n["intermediate_size"] = s.ffn;
  return n;
}

// SAPP-ND's Memory.from_string: "58GB" is 58·2^30 bytes (also MB, TB).
std::optional<double> memory_bytes(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) != 0 || text[i] == '.')) ++i;
  const auto number = parse_number(text.substr(0, i));
  const std::string unit = text.substr(i);
  double scale = 0;
  if (unit == "GB" || unit == "G" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
  if (unit == "MB" || unit == "M" || unit == "MiB") scale = 1024.0 * 1024;
  if (unit == "TB" || unit == "T" || unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  if (!number || scale == 0 || *number <= 0 || *number * scale > 1125899906842624.0) return std::nullopt;  // ≤ 1 PiB
  return *number * scale;
}

// Degrees, counts and sizes within meshfit's bounds before they are multiplied (no overflow).
void check_bounds(const Stated& s, const std::string& source) {
  constexpr std::int64_t kMaxDegree = std::int64_t{1} << 24;  // kMaxDevices
  constexpr std::int64_t kMaxCount = std::int64_t{1} << 31;
  const std::int64_t values[] = {s.dp,  s.tp, s.pp,     s.cp, s.ep, s.vpp, s.os_shard.value_or(1),
                                 s.mbs, s.m,  s.layers, s.mtp};
  for (std::size_t i = 0; i < std::size(values); ++i) {
    const std::int64_t max = i < 7 ? kMaxDegree : kMaxCount;
    if (values[i] > max) {
      throw InputError(source, s.fields[i], "at most " + std::to_string(max) + ", got " + std::to_string(values[i]));
    }
  }
  if (s.dp * s.tp > kMaxDegree || s.dp * s.tp * s.cp > kMaxDegree || s.dp * s.tp * s.cp * s.pp > kMaxDegree) {
    throw InputError(source, s.fields[0],
                     "degrees whose product dp·tp·cp·pp is at most " + std::to_string(kMaxDegree) + " devices");
  }
  if (s.m > (std::int64_t{1} << 40) / (s.mbs * s.dp)) {
    throw InputError(source, s.fields[8], "a global batch batch_size·dp·micro_batch_num of at most 2^40");
  }
}

SappNdConfig translate(const Stated& s, const std::string& source, const std::string& format) {
  check_bounds(s, source);
  SappNdConfig c;
  c.source = source;
  c.format = format;
  c.model_name = s.name;
  c.model = model_node(s, source);
  c.devices = s.dp * s.tp * s.cp * s.pp;
  c.seq = s.seq;
  c.global_batch = s.mbs * s.dp * s.m;
  c.precision = s.bytes_p >= 4 ? "fp32" : "deepspeed_fp16";
  const bool moe = s.experts > 1;
  std::vector<std::string> kv = {"dp=" + std::to_string(s.dp), "tp=" + std::to_string(s.tp),
                                 std::string("sp=") + (s.sp && s.tp > 1 ? "true" : "false"),
                                 "pp=" + std::to_string(s.pp)};
  if (s.vpp > 1) kv.push_back("vpp=" + std::to_string(s.vpp));
  if (s.cp > 1) {
    kv.push_back("cp=" + std::to_string(s.cp));
    if (s.cp_algo == "ulysses_cp") {
      kv.emplace_back("cp_algo=ulysses");
    } else if (s.cp_algo == "colossalai_cp") {
      kv.emplace_back("cp_algo=ring");
    } else {
      throw InputError(source, "parallel_config.context_parallel_algo",
                       "colossalai_cp or ulysses_cp, got " + quoted_text(s.cp_algo));
    }
  }
  if (moe) {
    kv.push_back("ep=" + std::to_string(s.ep));
    // _CostModelParser.config_dp_tp_exp: a stated expert_model_parallel is the expert TP degree;
    // without it, tp, or 1 when tp·ep exceeds dp·tp.
    const std::int64_t etp = s.etp ? *s.etp : (s.tp * s.ep > s.dp * s.tp ? 1 : s.tp);
    kv.push_back("etp=" + std::to_string(etp));
  }
  if (s.has_op) {
    kv.push_back(std::string("zero=") + (s.grad_shard ? "2" : "1"));
    // SAPP-ND's os_max_shard (optimizer_weight_shard_size, else dp·tp) is tp·G/cp in meshfit.
    const std::int64_t shard = s.os_shard ? *s.os_shard : s.dp * s.tp;
    if ((shard * s.cp) % s.tp != 0) {
      throw InputError(source, "parallel.parallel_optimizer_config.optimizer_weight_shard_size",
                       "a multiple of model_parallel / context_parallel (meshfit's shard group is its ·cp/tp), got " +
                           std::to_string(shard));
    }
    kv.push_back("shard_group=" + std::to_string(shard * s.cp / s.tp));
  }
  const std::vector<std::int64_t> per_stage = stage_layers(s, source);
  // recompute: true or false, a count per chunk, or a count per stage (the first n layers of each).
  std::string recompute = s.select_recompute ? "selective" : "none";
  std::vector<std::int64_t> full_per_stage;
  const YAML::Node& r = s.recompute;
  if (r && !r.IsNull()) {
    bool flag = false;
    if (r.IsScalar() && YAML::convert<bool>::decode(r, flag)) {
      if (flag) recompute = "full";
    } else if (r.IsScalar()) {
      const auto n = parse_integer(r.Scalar());
      if (!n || *n < 0) throw InputError(source, s.recompute_field, "true, false, a count or a list of pp counts");
      if (*n > 0) recompute = "full,recompute_layers=" + std::to_string(*n);
    } else if (r.IsSequence() && static_cast<std::int64_t>(r.size()) == s.pp) {
      for (std::size_t i = 0; i < r.size(); ++i) {
        const auto n = r[i].IsScalar() ? parse_integer(r[i].Scalar()) : std::nullopt;
        if (!n || *n < 0) {
          throw InputError(source, s.recompute_field + "[" + std::to_string(i) + "]",
                           "a count of layers (per-chunk lists of pp_interleave_num > 1 are not read)");
        }
        // A stage's slots may include MTP depths, which meshfit counts apart: at most its layers.
        full_per_stage.push_back(per_stage.empty() ? *n : std::min(*n, per_stage[i]));
      }
      if (std::any_of(full_per_stage.begin(), full_per_stage.end(), [](std::int64_t n) { return n > 0; })) {
        recompute = "full";
      } else {
        full_per_stage.clear();
      }
    } else {
      throw InputError(source, s.recompute_field,
                       "true, false, a count or a list of " + std::to_string(s.pp) + " counts (pp)");
    }
  }
  kv.push_back("recompute=" + recompute);
  kv.push_back("mbs=" + std::to_string(s.mbs));
  kv.push_back("m=" + std::to_string(s.m));
  c.strategy = join(kv);

  YAML::Node o;
  // The bytes SAPP-ND prices: parameters as initialised, two fp32 AdamW moments (bytes_os 4),
  // no separate master copy; gradients 2 bytes for arch_hooks' custom_mixtral and custom_llama2,
  // 4 for the default transformer (SAPP-ND's 0 without pipeline parallelism is not taken).
  const std::string lower = [&] {
    std::string t = s.name;
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t;
  }();
  const bool two_byte_grads = lower.find("mixtral") != std::string::npos || lower.find("llama2") != std::string::npos;
  o["beta_P"] = s.bytes_p;
  o["beta_G"] = two_byte_grads ? 2 : 4;
  o["beta_master"] = 0;
  o["beta_state"] = 4;
  o["beta_a"] = s.bytes_compute;
  o["beta_sm"] = s.bytes_softmax;
  o["beta_n"] = s.bytes_norm;
  o["grad_clip"] = s.clip;
  o["flash_attention"] = s.flash;
  if (moe) {
    o["moe_mode"] = s.gmm ? "dropless" : "capacity";  // use_gmm: SAPP-ND's dropless mode
    o["capacity_factor"] = s.capacity_factor;
  }
  c.run_options = o;
  YAML::Node layout(YAML::NodeType::Map);
  if (!per_stage.empty()) layout["layers_per_vstage"] = per_stage;
  if (!full_per_stage.empty()) layout["full_layers_per_vstage"] = full_per_stage;
  c.layout_options = layout;
  if (s.max_memory) {
    const auto bytes = memory_bytes(*s.max_memory);
    if (!bytes) throw InputError(source, s.memory_field, "a size such as \"58GB\", got " + quoted_text(*s.max_memory));
    YAML::Node d;
    d["preset"] = "ascend-910b-64gb";  // SAPP-ND's target: Ascend devices of this memory
    d["name"] = "ascend-" + *s.max_memory;
    d["capacity"] = static_cast<std::int64_t>(*bytes);
    c.device = d;
  }
  return c;
}

}  // namespace

SappNdConfig read_sapp_nd_config(const std::string& path) {
  const Fields root(load_yaml_file(path), path);
  if (root.has("parallel_config")) return translate(read_mindformers(root), path, "mindformers");
  if (const auto train = root.optional_map("train"); train && train->has("accelerator")) {
    return translate(read_hyperparallel(root), path, "hyperparallel");
  }
  throw InputError(path, "parallel_config",
                   "missing; expected SAPP-ND's MindFormers YAML (parallel_config, model.model_config, ...) or its "
                   "HyperParallel YAML (model.config_overrides, train.accelerator, ...)");
}

}  // namespace meshfit
